"""No bare vocabulary strings in views, API handlers, consumers or templates.

Tiers, axes, statuses, actions and outcomes are the domain's enums. A view that compares
`space.status == "awaiting_approval"`, or a template that tests `round.state == "failed"`,
silently stops matching the day the enum changes; with `SpaceStatus.AWAITING_APPROVAL` (or a
flag the view computes) the change breaks loudly. This test reads the code rather than running
it: in Python, a string constant that is compared (`==`, `!=`, `in`, `match`), returned, or
passed as a keyword argument (`filter(state="finished")`); in templates, a quoted string inside
`{% if %}`, `{% elif %}`, `{% with %}` or any tag comparing with `==`/`!=`/`in`. It fails when
that string is a value of one of the vocabulary enums below, naming file:line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from enum import Enum
from pathlib import Path

from guardrails import rules as guardrail_rules
from reviews.domain import (
    consensus,
    round_states,
    space_status,
    step_states,
    stream_states,
    tickets,
)
from reviews.domain import types as t
from workspaces import rules as workspace_rules

ROOT = Path(__file__).resolve().parents[1]

VOCABULARY: tuple[type[Enum], ...] = (
    t.Tier,
    t.AxisName,
    t.AxisResult,
    t.VerdictLevel,
    t.ReviewState,
    t.NodeStatus,
    stream_states.StreamState,
    t.StreamKind,
    t.ConfirmationLens,
    t.PublishState,
    t.PublishPath,
    round_states.RoundState,
    space_status.SpaceStatus,
    space_status.ClosedReason,
    tickets.TicketStatus,
    consensus.Action,
    guardrail_rules.Status,
    guardrail_rules.Policy,
    guardrail_rules.CheckpointOutcome,
    guardrail_rules.ActionName,
    guardrail_rules.Decision,
    workspace_rules.Role,
)


def vocabulary_literals(enums: Iterable[type[Enum]] = VOCABULARY) -> dict[str, str]:
    """Each enum value → the enum(s) it belongs to, e.g. "failed" → "RoundState, Status, …"."""
    owners: dict[str, list[str]] = {}
    for enum in enums:
        for member in enum:
            owners.setdefault(str(member.value), []).append(enum.__name__)
    return {value: ", ".join(names) for value, names in owners.items()}


LITERALS = vocabulary_literals()


def python_files() -> list[Path]:
    patterns = ("*/views.py", "*/views/*.py", "*/api.py", "workspaces/api/*.py", "*/consumers.py")
    return sorted(p for pattern in patterns for p in ROOT.glob(pattern))


def template_files() -> list[Path]:
    return sorted((ROOT / "templates").rglob("*.html"))


# Python ------------------------------------------------------------------------------------


def _strings(node: ast.AST) -> Iterator[ast.Constant]:
    """The string constants a comparison operand stands for (itself, or a literal collection's
    elements: `x in ("a", "b")`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _strings(element)


def _used_strings(tree: ast.AST) -> Iterator[ast.Constant]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                yield from _strings(operand)
        elif (
            (isinstance(node, ast.Return) and node.value is not None)
            or (isinstance(node, ast.keyword) and node.arg is not None)
            or isinstance(node, ast.MatchValue)
        ):
            yield from _strings(node.value)


def python_violations(source: str, name: str, literals: dict[str, str] = LITERALS) -> list[str]:
    tree = ast.parse(source, filename=name)
    found = {(node.lineno, node.value) for node in _used_strings(tree) if node.value in literals}
    return [f"{name}:{line}: {value!r} ({literals[value]})" for line, value in sorted(found)]


# Templates ---------------------------------------------------------------------------------

_TAG = re.compile(r"\{%-?\s*(.*?)\s*-?%\}", re.DOTALL)
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'")
_COMPARES = re.compile(r"==|!=|\bin\b")


def template_violations(source: str, name: str, literals: dict[str, str] = LITERALS) -> list[str]:
    problems = []
    for match in _TAG.finditer(source):
        tag = match.group(1)
        keyword = tag.split(maxsplit=1)[0] if tag else ""
        if keyword not in {"if", "elif", "with"} and not _COMPARES.search(tag):
            continue
        line = source.count("\n", 0, match.start()) + 1
        for quoted in _QUOTED.finditer(tag):
            value = quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
            if value in literals:
                problems.append(f"{name}:{line}: {value!r} ({literals[value]})")
    return problems


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


# Tests -------------------------------------------------------------------------------------


def test_the_vocabulary_is_read_from_the_enums():
    assert LITERALS["awaiting_approval"] == "SpaceStatus"
    assert "RoundState" in LITERALS["failed"] and "Status" in LITERALS["failed"]
    assert "thorough" in LITERALS and "apiContract" in LITERALS and "prPublish" in LITERALS
    assert len(python_files()) >= 6 and len(template_files()) >= 20


def test_views_api_and_consumers_use_the_enums_not_bare_strings():
    problems = [
        problem
        for path in python_files()
        for problem in python_violations(path.read_text(), _relative(path))
    ]
    assert problems == [], "\n".join(problems)


def test_templates_use_the_enums_not_bare_strings():
    problems = [
        problem
        for path in template_files()
        for problem in template_violations(path.read_text(), _relative(path))
    ]
    assert problems == [], "\n".join(problems)


def _hits(problems: list[str]) -> list[tuple[int, str]]:
    """(line, value) of each problem, for the planted cases."""
    out = []
    for problem in problems:
        _, line, rest = problem.split(":", 2)
        out.append((int(line), rest.split("'")[1]))
    return out


def test_a_planted_python_violation_is_caught():
    planted = (
        "def view(request, space, round):\n"
        "    label = 'awaiting approval'  # prose: fine\n"
        "    if space.status == 'awaiting_approval':\n"
        "        return 'failed'\n"
        "    rows = round.streams.filter(state='running')\n"
        "    ok = round.state in ('finished', 'cancelled')\n"
        "    if round.state == RoundState.FINISHED:  # the enum: fine\n"
        "        return {'detail': 'pending'}  # a message, neither compared nor returned bare\n"
        "    match result.outcome:\n"
        "        case 'refused':\n"
        "            pass\n"
    )
    problems = python_violations(planted, "planted/views.py")
    assert _hits(problems) == [
        (3, "awaiting_approval"),
        (4, "failed"),
        (5, "running"),
        (6, "cancelled"),
        (6, "finished"),
        (10, "refused"),
    ]
    assert problems[0] == "planted/views.py:3: 'awaiting_approval' (SpaceStatus)"


def test_a_planted_template_violation_is_caught():
    planted = (
        "<p>{{ space.status }}: awaiting approval, failed or done</p>\n"
        '{% if round.state == "failed" %}x{% endif %}\n'
        "{% if round.state == RoundState.FAILED %}the enum in the context: fine{% endif %}\n"
        "{% with tier='thorough' %}{{ tier }}{% endwith %}\n"
        '{% url "reviews:detail" workspace.slug space.pk %}\n'
        '{% firstof a b "failed" %}\n'
        "{% if action == 'dismiss' %}danger{% endif %}\n"
    )
    problems = template_violations(planted, "planted.html")
    assert _hits(problems) == [(2, "failed"), (4, "thorough"), (7, "dismiss")]
    assert problems[0].startswith("planted.html:2: 'failed' (")


def test_model_choices_are_the_domain_enums():
    """The models' choices are built from the same enums, value for value, in the same order
    (so a new status is added once, and no migration is needed for a rename of a label)."""
    from guardrails.models import ActionPolicy, ApprovalRequest
    from reviews.models import (
        AxisResult,
        NodeConfirmation,
        PipelineStep,
        PublishRecord,
        ReviewerStream,
        ReviewerTicket,
        ReviewNode,
        ReviewRound,
        ReviewSpace,
        Verdict,
    )
    from workspaces.models import Membership, Workspace

    def values(model, field: str) -> list[str]:
        return [value for value, _ in model._meta.get_field(field).choices]

    pairs = [
        (values(ReviewSpace, "status"), space_status.SpaceStatus),
        (values(ReviewRound, "state"), round_states.RoundState),
        (values(ReviewRound, "tier"), t.Tier),
        (values(ReviewerStream, "state"), stream_states.StreamState),
        (values(PipelineStep, "state"), step_states.StepState),
        (values(ReviewerStream, "kind"), t.StreamKind),
        (values(ReviewNode, "status"), t.NodeStatus),
        (values(NodeConfirmation, "lens"), t.ConfirmationLens),
        (values(AxisResult, "axis"), t.AxisName),
        (values(AxisResult, "result"), t.AxisResult),
        (values(Verdict, "level"), t.VerdictLevel),
        (values(PublishRecord, "state"), t.PublishState),
        (values(PublishRecord, "path"), t.PublishPath),
        (values(ReviewerTicket, "status"), tickets.TicketStatus),
        (values(ApprovalRequest, "status"), guardrail_rules.Status),
        (values(ActionPolicy, "policy"), guardrail_rules.Policy),
        (values(Workspace, "tier"), t.Tier),
        (values(Membership, "role"), workspace_rules.Role),
    ]
    for stored, enum in pairs:
        assert stored == [m.value for m in enum], enum.__name__
    labelled = [
        (ReviewerStream.Kind, t.StreamKind),
        (NodeConfirmation.Lens, t.ConfirmationLens),
        (PublishRecord.State, t.PublishState),
        (PublishRecord.Path, t.PublishPath),
        (ReviewerTicket.Status, tickets.TicketStatus),
    ]
    for choices, enum in labelled:
        assert [(c.value, c.label) for c in choices] == [(m.value, m.label) for m in enum]


def test_the_api_role_literal_is_the_role_enum():
    from typing import get_args

    from workspaces.api.schemas import RoleName

    assert list(get_args(RoleName)) == [r.value for r in workspace_rules.Role]
