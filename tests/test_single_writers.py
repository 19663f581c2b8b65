"""One writer per state: each `state`/`status` column is written by one service function.

The guard reads every module of config/, reviews/, workspaces/ and guardrails/ (migrations
and tests excepted) with `ast` and reports, outside the declared writers, any:
- assignment to an attribute named `state` or `status` (`x.state = …`, also in a tuple);
- `setattr(x, "state", …)`, and any `setattr` whose name is not a literal (it could be);
- `.update(…)` with a `state=`/`status=` keyword or a `**{…}` literal naming one, and
  `.update(**values)` whose keys the reader cannot see;
- `update_or_create` / `get_or_create` / `create` giving a state or status (as a keyword or
  in `defaults`/`create_defaults`), and `bulk_update` listing one;
- `save(update_fields=[…])` listing one.
The same calls through `functools.partial` count too.

Creating a row is allowed anywhere when it takes the model's default (initial) state; a
creation that names a state or status is allowed only in a module that holds a writer.

`state` and `status` are also names outside the models (an exception's HTTP status, a
dataclass in the domain). Those sites are listed in ALLOWED, each with its reason; the list
is kept small and exact (module and function), so a new site fails until someone decides.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("config", "reviews", "workspaces", "guardrails")
FIELDS = frozenset({"state", "status"})


@dataclass(frozen=True)
class Writer:
    module: str
    function: str
    writes: tuple[str, ...]  # Model.field: what this function is the one writer of


#: The one writer of each state. Model → where its transition table lives, in the docstrings.
WRITERS = (
    # reviews/domain/round_states.py
    Writer("reviews.services.rounds", "round_transition", ("ReviewRound.state",)),
    # reviews/domain/stream_states.py
    Writer("reviews.services.streams", "stream_transition", ("ReviewerStream.state",)),
    # derived, not moved: reviews/domain/space_status.py decides it from the space's facts
    Writer("reviews.services.spaces", "space_status_refresh", ("ReviewSpace.status",)),
    # reviews/domain/consensus.py ALLOWED_TRANSITIONS
    Writer("reviews.services.nodes", "nodes_transition", ("ReviewNode.status",)),
    # guardrails/rules.py TRANSITIONS
    Writer("guardrails.services.approvals", "approval_transition", ("ApprovalRequest.status",)),
    # reviews/domain/tickets.py TRANSITIONS
    Writer("reviews.services.notes", "ticket_transition", ("ReviewerTicket.status",)),
    # reviews/domain/step_states.py
    Writer("reviews.pipeline.step_writes", "step_transition", ("PipelineStep.state",)),
    # claimed → posted | failed | uncertain where it posts to GitHub; claimed | uncertain →
    # posted | failed where an execution whose worker died is settled
    Writer("reviews.services.publishing", "publication_move", ("PublishRecord.state",)),
    # queued → done | failed, once (reviews/services/sarif.py)
    Writer("reviews.services.sarif", "sarif_upload_settle", ("SarifUpload.state",)),
    # reviews/domain/few_shots.py TRANSITIONS: proposed → accepted | rejected, once
    Writer(
        "workspaces.services.few_shots",
        "few_shot_proposal_transition",
        ("FewShotProposal.status",),
    ),
)

#: Sites that write something named `state`/`status` that is no model's state, or copy
#: fields by name from a fixed list: (module, function) → why it is not a second writer.
ALLOWED: dict[tuple[str, str], str] = {
    ("reviews.agents.model_errors", "ModelRunError.__init__"): (
        "the provider's HTTP status kept on an exception, not a model field"
    ),
    ("reviews.sources.github_errors", "GitHubError.__init__"): (
        "GitHub's HTTP status kept on an exception, not a model field"
    ),
    ("reviews.services.consolidation", "round_consolidate"): (
        "copies a duplicate's priority, type, severity, body, fix and tags by name from the"
        " dict literal above it; no status among them"
    ),
    ("workspaces.services.reviewers", "reviewer_config_update"): (
        "copies a reviewer's validated settings by name; ReviewerConfig has no state or status"
    ),
    ("guardrails.verification", "_checkpoint_save"): (
        "updates an audit checkpoint from the dict literal above it: seq, hash, mac, verified_at"
    ),
    ("config.typed_json", "SchemaJSONField.contribute_to_class"): (
        "puts the field's attribute descriptor on the model class, as Django's own fields do;"
        " it writes no row"
    ),
}

_UPDATE_CALLS = frozenset({"update"})
_CREATE_CALLS = frozenset({"create", "get_or_create", "update_or_create"})


@dataclass(frozen=True)
class Violation:
    module: str
    function: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} in {self.function or '<module>'}: {self.what}"


def _literal_names(node: ast.AST | None) -> set[str]:
    """The string literals of a list/tuple/set literal, or the keys of a dict literal."""
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)}
    if isinstance(node, ast.Dict):
        return {k.value for k in node.keys if isinstance(k, ast.Constant)}
    return set()


def _attr_targets(target: ast.AST) -> list[ast.Attribute]:
    if isinstance(target, ast.Attribute):
        return [target]
    if isinstance(target, ast.Tuple | ast.List):
        return [a for e in target.elts for a in _attr_targets(e)]
    if isinstance(target, ast.Starred):
        return _attr_targets(target.value)
    return []


def _call_writes(call: ast.Call) -> tuple[str, str] | None:
    """('write' | 'create', description) when the call writes a state/status column."""
    func = call.func
    # partial(X.objects.filter(…).update, state=…) is the same call, made later.
    if (
        isinstance(func, ast.Name | ast.Attribute)
        and (func.id if isinstance(func, ast.Name) else func.attr) == "partial"
        and call.args
        and isinstance(call.args[0], ast.Attribute)
    ):
        inner = ast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords)
        return _call_writes(inner)
    if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) >= 2:
        name = call.args[1]
        if isinstance(name, ast.Constant):
            return ("write", f"setattr(…, {name.value!r})") if name.value in FIELDS else None
        return ("write", "setattr with a computed name")
    if not isinstance(func, ast.Attribute):
        return None
    keywords = {k.arg for k in call.keywords if k.arg}
    spread = [k.value for k in call.keywords if k.arg is None]
    if func.attr in _UPDATE_CALLS:
        named = (keywords | {n for s in spread for n in _literal_names(s)}) & FIELDS
        if named:
            return "write", f".update({', '.join(sorted(named))}=…)"
        if any(not isinstance(s, ast.Dict) for s in spread):
            return "write", ".update(**…) with fields the reader cannot see"
        return None
    if func.attr in _CREATE_CALLS:
        named = keywords & FIELDS
        for k in call.keywords:
            if k.arg in ("defaults", "create_defaults"):
                named |= _literal_names(k.value) & FIELDS
        if named:
            return "create", f".{func.attr}({', '.join(sorted(named))}=…)"
        return None
    if func.attr == "bulk_update":
        fields = call.args[1] if len(call.args) > 1 else None
        for k in call.keywords:
            if k.arg == "fields":
                fields = k.value
        if _literal_names(fields) & FIELDS:
            return "write", ".bulk_update(…) of " + ", ".join(
                sorted(_literal_names(fields) & FIELDS)
            )
        return None
    if func.attr == "save":
        for k in call.keywords:
            if k.arg == "update_fields" and _literal_names(k.value) & FIELDS:
                named = ", ".join(sorted(_literal_names(k.value) & FIELDS))
                return "write", f".save(update_fields=[… {named} …])"
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.scope: list[str] = []
        self.found: list[tuple[str, int, str, str]] = []  # function, line, kind, what

    def _enter(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._enter(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._enter(node, node.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._enter(node, node.name)

    def _note(self, node: ast.AST, kind: str, what: str) -> None:
        self.found.append((".".join(self.scope), node.lineno, kind, what))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            for attr in _attr_targets(target):
                if attr.attr in FIELDS:
                    self._note(node, "write", f"assigns .{attr.attr}")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        for attr in _attr_targets(node.target):
            if attr.attr in FIELDS:
                self._note(node, "write", f"assigns .{attr.attr}")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            for attr in _attr_targets(node.target):
                if attr.attr in FIELDS:
                    self._note(node, "write", f"assigns .{attr.attr}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        found = _call_writes(node)
        if found is not None:
            self._note(node, *found)
        self.generic_visit(node)


def _belongs_to(function: str, owner: str) -> bool:
    """A write inside `owner` or a function nested in it."""
    return function == owner or function.startswith(owner + ".")


def violations(source: str, module: str) -> list[Violation]:
    finder = _Finder(module)
    finder.visit(ast.parse(source))
    writer_modules = {w.module for w in WRITERS}
    out = []
    for function, line, kind, what in finder.found:
        if any(w.module == module and _belongs_to(function, w.function) for w in WRITERS):
            continue
        if kind == "create" and module in writer_modules:
            continue
        if any(m == module and _belongs_to(function, f) for m, f in ALLOWED):
            continue
        out.append(Violation(module, function, line, what))
    return out


def _modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts or "tests" in parts:
                continue
            found.append((".".join(parts), path))
    return found


def test_only_the_declared_writers_write_a_state_or_a_status() -> None:
    found = [v for module, path in _modules() for v in violations(path.read_text(), module)]
    assert not found, "a state or status written outside its one writer:\n" + "\n".join(
        map(str, found)
    )


def test_every_declared_writer_and_allowed_site_exists() -> None:
    """A renamed writer or a removed exception must not leave a stale entry behind."""
    modules = dict(_modules())
    for module, function in [(w.module, w.function) for w in WRITERS] + list(ALLOWED):
        tree = ast.parse(modules[module].read_text())
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names |= {
                    f"{node.name}.{f.name}"
                    for f in node.body
                    if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                }
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
        assert function in names, f"{module}.{function} is declared but does not exist"
    models = [m for w in WRITERS for m in w.writes]
    assert len(models) == len(set(models)), "a state with two declared writers"


PLANTED = """
from reviews.models import ReviewRound, ReviewerStream
from functools import partial

def finish(review_round):
    review_round.state = "finished"

def finish_many(rounds):
    ReviewRound.objects.filter(pk__in=rounds).update(state="finished", error="")

def finish_spread(pk):
    ReviewRound.objects.filter(pk=pk).update(**{"state": "finished"})

def finish_unseen(pk, values):
    ReviewRound.objects.filter(pk=pk).update(**values)

def finish_later(stream):
    return partial(ReviewerStream.objects.filter(pk=stream.pk).update, state="done")

def finish_by_name(node):
    setattr(node, "status", "dismissed")

def finish_by_variable(node, field):
    setattr(node, field, "dismissed")

def finish_saved(node):
    node.save(update_fields=["status", "updated_at"])

def finish_in_bulk(nodes):
    ReviewNode.objects.bulk_update(nodes, ["status"])

def finish_at_birth(space):
    return ReviewRound.objects.get_or_create(space=space, defaults={"state": "finished"})

def swap(a, b):
    a.state, b.status = b.status, a.state

class Holder:
    def set(self, value):
        self.status: str = value
"""


def test_the_guard_reports_every_kind_of_planted_write() -> None:
    found = violations(PLANTED, "reviews.web.views")
    by_function = {v.function for v in found}
    assert by_function == {
        "finish",
        "finish_many",
        "finish_spread",
        "finish_unseen",
        "finish_later",
        "finish_by_name",
        "finish_by_variable",
        "finish_saved",
        "finish_in_bulk",
        "finish_at_birth",
        "swap",
        "Holder.set",
    }
    assert sum(v.function == "swap" for v in found) == 2


def test_the_guard_accepts_the_writer_and_what_is_not_a_write() -> None:
    quiet = """
def round_transition(review_round, to):
    ReviewRound.objects.filter(pk=review_round.pk).update(state=to)
    review_round.state = to

def reads(review_round):
    ReviewRound.objects.filter(state="running").exclude(status="x").update(stage="panel")
    return review_round.state == "running"

def creates(space):
    return ReviewRound.objects.create(space=space, number=1)
"""
    assert violations(quiet, "reviews.services.rounds") == []
    # The same function name in another module is not the writer.
    assert [v.function for v in violations(quiet, "reviews.web.views")] == ["round_transition"] * 2
    # A creation naming its state is allowed only where a writer lives.
    birth = "def make(s):\n    return ReviewRound.objects.create(space=s, state='running')\n"
    assert violations(birth, "reviews.services.rounds") == []
    assert len(violations(birth, "reviews.pipeline.stages")) == 1


@pytest.mark.parametrize("module", ["reviews.pipeline.stages", "guardrails.views"])
def test_a_planted_write_in_a_real_module_fails_the_walk(module: str) -> None:
    """The walk reads the real files: a write added to one of them is found."""
    path = dict(_modules())[module]
    planted = path.read_text() + "\n\ndef oops(x):\n    x.status = 'done'\n"
    assert [v.function for v in violations(planted, module)] == ["oops"]
