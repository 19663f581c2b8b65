"""The add_review_node payload: schema, path safety, checkout checks."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.node_schemas import nested_node_schema, node_tool_schema
from reviews.domain.nodes import (
    Accepted,
    NodePayload,
    Rejected,
    lift_flat_payload,
    node_view_from_payload,
    normalise_anchor_path,
    parse_node_payload,
    redact_payload,
)
from reviews.domain.types import Category, NodeStatus, Priority, Side
from tests.fakes.model_server import flat_finding

CHECKOUT = {"reviews/x.py": 80, "reviews/auth.py": 120}


def _payload(**changes: object) -> dict[str, object]:
    payload: dict[str, object] = {
        "reasoning": "The token is compared with ==, which leaks timing.",
        "type": "bug",
        "priority": "P1",
        "triage": {"category": "security", "severity": "high", "effort": "small"},
        "anchor": {"path": "reviews/auth.py", "start_line": 40, "end_line": 42},
        "fix": {"replacement_lines": ["    return hmac.compare_digest(a, b)"]},
        "confidence": 0.8,
        "title": "Timing-unsafe token comparison",
        "body": "Use `hmac.compare_digest`.",
    }
    payload.update(copy.deepcopy(changes))
    return payload


def _reason(raw: object, **kwargs: object) -> str:
    result = parse_node_payload(raw, **kwargs)  # type: ignore[arg-type]
    assert isinstance(result, Rejected), result
    return result.reason


def test_it_accepts_a_complete_payload() -> None:
    """A well-formed payload becomes a node with typed fields."""
    result = parse_node_payload(_payload(), file_lines=CHECKOUT)
    assert isinstance(result, Accepted)
    assert result.node.priority is Priority.P1
    assert result.node.triage.category is Category.SECURITY
    assert result.node.anchor is not None and result.node.anchor.side is Side.RIGHT


def test_it_accepts_json_text_and_an_unanchored_node() -> None:
    """The tool may hand over raw JSON; a node without anchor is PR-wide and valid."""
    import json

    raw = _payload()
    del raw["anchor"]
    result = parse_node_payload(json.dumps(raw), file_lines=CHECKOUT)
    assert isinstance(result, Accepted)
    assert result.node.anchor is None


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"confidence": 1.5}, "confidence: must be between 0 and 1 (got 1.5)"),
        ({"confidence": -0.1}, "confidence: must be between 0 and 1 (got -0.1)"),
        ({"confidence": "0.8"}, "confidence: must be a number (got '0.8')"),
        ({"priority": "P7"}, "priority: must be one of 'P0', 'P1', 'P2' or 'P3' (got 'P7')"),
        ({"type": "nit"}, "type: must be one of"),
        ({"title": 42}, "title: must be a string (got 42)"),
        ({"title": "   "}, "title: must not be empty"),
        ({"title": "x" * 201}, "title: must be at most 200 characters (got 201)"),
        ({"triage": "security"}, "triage: must be an object"),
        ({"triage": {"category": "vibes", "severity": "high", "effort": "small"}}, "category"),
        ({"fix": {"replacement_lines": "one line"}}, "fix.replacement_lines: must be a list"),
        ({"confidance": 0.9}, "confidance: unknown field"),
        (
            {"anchor": {"path": "../../etc/passwd", "start_line": 1, "end_line": 1}},
            "anchor.path: escapes the worktree",
        ),
        (
            {"anchor": {"path": "reviews/../../secrets", "start_line": 1, "end_line": 1}},
            "anchor.path: escapes the worktree",
        ),
        (
            {"anchor": {"path": "/etc/passwd", "start_line": 1, "end_line": 1}},
            "anchor.path: must be relative to the repository root (got '/etc/passwd')",
        ),
        (
            {"anchor": {"path": "C:/Windows/win.ini", "start_line": 1, "end_line": 1}},
            "anchor.path: must be relative",
        ),
        (
            {"anchor": {"path": "reviews\\x.py", "start_line": 1, "end_line": 1}},
            "anchor.path: use forward slashes",
        ),
        (
            {"anchor": {"path": "reviews/x.py\x00.txt", "start_line": 1, "end_line": 1}},
            "anchor.path: contains a control character",
        ),
        (
            {"anchor": {"path": "reviews/x.py", "start_line": 0, "end_line": 1}},
            "anchor.start_line: must be 1 or more (got 0)",
        ),
        (
            {"anchor": {"path": "reviews/x.py", "start_line": 9, "end_line": 3}},
            "anchor: start_line 9 is after end_line 3",
        ),
        (
            {"anchor": {"path": "reviews/x.py", "start_line": True, "end_line": 3}},
            "anchor.start_line: must be an integer (got True)",
        ),
        (
            {"anchor": {"path": "reviews/x.py", "start_line": 100, "end_line": 120}},
            "anchor.end_line 120 is past the end of reviews/x.py (80 lines)",
        ),
        (
            {"anchor": {"path": "reviews/missing.py", "start_line": 1, "end_line": 2}},
            "anchor.path: reviews/missing.py is not in the head checkout",
        ),
    ],
)
def test_it_rejects_bad_payloads_with_a_precise_reason(
    changes: dict[str, object], expected: str
) -> None:
    """Each malformed payload is rejected, and the reason names the field and the problem."""
    assert expected in _reason(_payload(**changes), file_lines=CHECKOUT)


def test_it_lists_every_missing_field() -> None:
    """Missing required fields are all reported, not just the first, named as the form the
    payload came in names them: the flat form when nothing says nested."""
    reason = _reason({"reasoning": "only thoughts"})
    for field in ("type", "severity", "category", "effort", "confidence", "title", "body"):
        assert f"{field}: required field is missing" in reason
    assert "priority" not in reason and "triage" not in reason
    reason = _reason({"reasoning": "only thoughts", "priority": "P1"})
    for field in ("type", "triage", "confidence", "title", "body"):
        assert f"{field}: required field is missing" in reason


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, "payload: must be an object (got NoneType)"),
        ([1, 2], "payload: must be an object (got list)"),
        ("{not json", "payload: not valid JSON"),
    ],
)
def test_it_rejects_non_objects_without_raising(raw: object, expected: str) -> None:
    """Garbage input never raises: it is a rejection like any other."""
    assert expected in _reason(raw)


def test_it_checks_eof_through_a_callable_and_survives_a_broken_lookup() -> None:
    """file_lines may be a callable; one that raises counts as 'not in the checkout'."""

    def lines(path: str) -> int | None:
        if path == "reviews/x.py":
            return 10
        raise OSError("disk gone")

    assert isinstance(
        parse_node_payload(
            _payload(anchor={"path": "reviews/x.py", "start_line": 1, "end_line": 10}),
            file_lines=lines,
        ),
        Accepted,
    )
    reason = _reason(_payload(), file_lines=lines)
    assert "not in the head checkout" in reason


def test_it_skips_the_eof_check_for_left_side_anchors() -> None:
    """A LEFT anchor points into the base version, which file_lines does not describe."""
    anchor = {"path": "reviews/x.py", "start_line": 90, "end_line": 95, "side": "LEFT"}
    assert isinstance(parse_node_payload(_payload(anchor=anchor), file_lines=CHECKOUT), Accepted)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("./reviews//x.py", "reviews/x.py"), ("a/./b.py", "a/b.py"), ("README", "README")],
)
def test_it_normalises_harmless_path_spellings(raw: str, expected: str) -> None:
    """Redundant ./ and // are normalised rather than rejected."""
    assert normalise_anchor_path(raw) == expected


@pytest.mark.parametrize("raw", ["", "reviews/", ".", "~/x.py", "..", "a/../b.py"])
def test_it_refuses_paths_that_name_no_file_inside_the_worktree(raw: str) -> None:
    """Empty, directory, home-relative and parent paths are refused."""
    with pytest.raises(ValueError):
        normalise_anchor_path(raw)


def test_it_exposes_a_flat_tool_schema_with_reasoning_first() -> None:
    """The model writes its reasoning before the verdict fields, so it comes first; every field
    is one level deep, and severity stands for the priority."""
    schema = node_tool_schema()
    assert next(iter(schema["properties"])) == "reasoning"
    assert schema["additionalProperties"] is False
    assert schema["required"] == [
        "type",
        "severity",
        "category",
        "effort",
        "confidence",
        "title",
        "body",
    ]
    assert set(schema["properties"]) == {
        "reasoning", "type", "severity", "category", "effort", "flags", "path", "start_line",
        "end_line", "side", "fix_lines", "fix_prompt", "confidence", "title", "body", "map_anchor",
        "cross_notes", "requirement_gap",
    }  # fmt: skip
    assert not any("properties" in field for field in schema["properties"].values())
    assert '"title": "' not in json.dumps(schema) and "title" in schema["properties"]
    assert "description" not in schema["properties"]["title"]  # its rejection says the limit
    schema["properties"].clear()
    assert node_tool_schema()["properties"]  # each call builds a fresh one


def test_its_tool_schema_is_compact_and_names_every_value_the_rules_read() -> None:
    """It goes out with every reviewer call: under 1,500 characters (the nested form took about
    2,000), yet every enum value of the payload is there, and every fact the severity floors
    read is a flag."""
    schema = node_tool_schema()
    text = json.dumps(schema, separators=(",", ":"))
    assert len(text) <= 1500, len(text)
    assert "$ref" not in text and "default" not in text and "null" not in text
    full = NodePayload.model_json_schema()
    for name, definition in full["$defs"].items():
        if name == "Priority":  # severity says it
            continue
        for value in definition.get("enum", ()):
            assert f'"{value}"' in text or f"{value}|" in text or f"|{value}" in text, value
    for fact in ("exploitable_externally", "hot_path", "critical_path", "functional_effect"):
        assert fact in text
    assert "diff" not in text and "fix_prompt" in text  # exact lines, or how to fix it


def test_the_nested_schema_mcp_shows_names_every_field_and_value() -> None:
    """What an outside agent is shown through MCP: the nested payload itself, diff and fix
    prompt included."""
    schema = nested_node_schema()
    text = json.dumps(schema, separators=(",", ":"))
    assert next(iter(schema["properties"])) == "reasoning"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"type", "priority", "triage", "confidence", "title", "body"}
    assert "$ref" not in text and "default" not in text and "null" not in text
    full = NodePayload.model_json_schema()
    assert list(schema["properties"]) == list(full["properties"])
    for name, definition in full["$defs"].items():
        for value in definition.get("enum", ()):
            assert f'"{value}"' in text, (name, value)
        for field in definition.get("properties", ()):
            assert f'"{field}"' in text, (name, field)


def test_it_builds_the_rules_view_of_an_accepted_node() -> None:
    """An accepted payload converts to an open NodeView carrying anchor, fix and flags."""
    result = parse_node_payload(
        _payload(
            triage={
                "category": "security",
                "severity": "high",
                "effort": "small",
                "exploitable_externally": True,
            }
        ),
        file_lines=CHECKOUT,
    )
    assert isinstance(result, Accepted)
    view = node_view_from_payload(result.node, node_id="n1", agent="agent-a", stream="impl")
    assert view.status is NodeStatus.OPEN
    assert view.location == "reviews/auth.py:40-42"
    assert view.replacement_lines == ("    return hmac.compare_digest(a, b)",)
    assert view.exploitable_externally is True


# -- redaction at the recording boundary ---------------------------------------------------------

TOKEN = "ghp_Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b"


def test_every_text_of_an_accepted_node_is_redacted() -> None:
    """What is stored is shown, published and exported: a quoted secret stops here."""
    result = parse_node_payload(
        _payload(
            reasoning=f"B105 quotes '{TOKEN}'.",
            title=f"B105: Possible hardcoded password: '{TOKEN}'",
            body=f"The literal {TOKEN} is a GitHub token.",
            fix={"diff": f"+TOKEN = '{TOKEN}'\n", "fix_prompt": f"Remove {TOKEN}."},
            cross_notes=[{"dimension": "quality", "note": f"also {TOKEN}"}],
        ),
        file_lines=CHECKOUT,
    )
    assert isinstance(result, Accepted)
    dumped = result.node.model_dump_json()
    assert TOKEN not in dumped
    assert result.node.title == "B105: Possible hardcoded password: '[REDACTED:github_token]'"
    assert "[REDACTED:github_token]" in result.node.fix.fix_prompt


def test_replacement_lines_holding_a_secret_are_dropped_not_redacted() -> None:
    """A one-click suggestion would commit either the secret or the marker."""
    result = parse_node_payload(
        _payload(fix={"replacement_lines": [f'TOKEN = "{TOKEN}"'], "fix_prompt": "Use env."}),
        file_lines=CHECKOUT,
    )
    assert isinstance(result, Accepted)
    assert result.node.fix.replacement_lines is None and result.node.fix.fix_prompt == "Use env."
    clean = parse_node_payload(_payload(), file_lines=CHECKOUT)
    assert clean.node.fix.replacement_lines == ["    return hmac.compare_digest(a, b)"]


def test_a_rejection_reason_never_repeats_a_secret() -> None:
    """Rejection reasons quote the offending value and are stored on the stream."""
    reason = _reason(_payload(confidence=TOKEN, type=TOKEN))
    assert TOKEN not in reason and "[REDACTED:" in reason


@given(st.text(max_size=80), st.sampled_from(["", TOKEN, "password = 'hunter2x9'"]))
def test_redacting_an_accepted_node_again_changes_nothing(text: str, secret: str) -> None:
    result = parse_node_payload(
        _payload(title=f"t {secret} {text}"[:150] or "t", body=f"{text} {secret}"),
        file_lines=CHECKOUT,
    )
    if isinstance(result, Accepted):
        assert redact_payload(result.node) == result.node
        assert secret in ("", "password = 'hunter2x9'") or TOKEN not in result.node.body


# -- the flat form models are shown --------------------------------------------------------------


def _flat(**changes: object) -> dict[str, object]:
    """`_payload()` in the flat form, as a model given `node_tool_schema` writes it."""
    payload: dict[str, object] = {
        "reasoning": "The token is compared with ==, which leaks timing.",
        "type": "bug",
        "severity": "high",
        "category": "security",
        "effort": "small",
        "path": "reviews/auth.py",
        "start_line": 40,
        "end_line": 42,
        "fix_lines": ["    return hmac.compare_digest(a, b)"],
        "confidence": 0.8,
        "title": "Timing-unsafe token comparison",
        "body": "Use `hmac.compare_digest`.",
    }
    payload.update(copy.deepcopy({k: v for k, v in changes.items() if v is not _DROP}))
    return {k: v for k, v in payload.items() if changes.get(k, v) is not _DROP}


_DROP = object()


def _accepted(raw: object) -> NodePayload:
    result = parse_node_payload(raw, file_lines=CHECKOUT)
    assert isinstance(result, Accepted), result
    return result.node


def test_a_flat_payload_becomes_the_nested_node_it_stands_for() -> None:
    """Severity gives the priority, the anchor's and fix's fields are lifted into theirs."""
    assert _accepted(_flat()) == _accepted(_payload())


@pytest.mark.parametrize(
    ("severity", "priority"),
    [("critical", Priority.P0), ("high", Priority.P1), ("medium", Priority.P2), ("low", "P3")],
)
def test_the_priority_follows_the_severity_unless_given(severity: str, priority: str) -> None:
    assert _accepted(_flat(severity=severity)).priority == priority
    assert _accepted(_flat(severity=severity, priority=None)).priority == priority
    # Not shown to models, still taken: a ranking apart from the severity (MCP, scenarios).
    assert _accepted(_flat(severity=severity, priority="P3")).priority is Priority.P3


def test_flags_set_the_facts_the_severity_floors_read() -> None:
    node = _accepted(_flat(flags=["exploitable_externally", "hot_path", "no_functional_effect"]))
    triage = node.triage
    assert triage.exploitable_externally and triage.hot_path and not triage.critical_path
    assert triage.functional_effect is False
    plain = _accepted(_flat(flags=[])).triage
    assert not plain.exploitable_externally and plain.functional_effect is True


def test_a_flat_payload_without_lines_is_pr_wide() -> None:
    """No path and no lines (or nulls, as some models write them) make no anchor; a side alone
    anchors nothing either."""
    bare = dict.fromkeys(("path", "start_line", "end_line", "fix_lines"), _DROP)
    assert _accepted(_flat(**bare)).anchor is None
    nulls = dict.fromkeys(("path", "start_line", "end_line", "fix_lines"), None)
    assert _accepted(_flat(**nulls, side="RIGHT")).anchor is None
    left = _accepted(_flat(side="LEFT", start_line=90, end_line=95)).anchor
    assert left is not None and left.side is Side.LEFT  # not checked against the head


def test_cross_notes_are_dimension_colon_note_strings() -> None:
    node = _accepted(
        _flat(
            cross_notes=["quality: no test covers it", "Performance:hashes: twice", " security :x"]
        )
    )
    assert [(n.dimension.value, n.note) for n in node.cross_notes or []] == [
        ("quality", "no test covers it"),
        ("performance", "hashes: twice"),
        ("security", "x"),
    ]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"severity": "urgent"}, "severity: must be one of 'critical', 'high', 'medium' or 'low'"),
        ({"category": "vibes"}, "category: must be one of"),
        ({"effort": None}, "effort: must be one of"),
        ({"severity": _DROP}, "severity: required field is missing"),
        ({"flags": "hot_path"}, "flags: must be a list (got 'hot_path')"),
        ({"flags": ["fast"]}, "flags: must be one of 'exploitable_externally', 'hot_path', "),
        ({"path": "../../etc/passwd"}, "path: escapes the worktree"),
        ({"start_line": 0}, "start_line: must be 1 or more (got 0)"),
        ({"start_line": "40"}, "start_line: must be an integer (got '40')"),
        ({"end_line": _DROP}, "end_line: required field is missing"),
        ({"start_line": 50}, "end_line: start_line 50 is after end_line 42"),
        ({"side": "MIDDLE"}, "side: must be one of 'RIGHT' or 'LEFT'"),
        ({"start_line": 100, "end_line": 130}, "end_line 130 is past the end of reviews/auth.py"),
        ({"path": "reviews/missing.py"}, "path: reviews/missing.py is not in the head checkout"),
        ({"fix_lines": "one line"}, "fix_lines: must be a list"),
        ({"title": "x" * 201}, "title: must be at most 200 characters (got 201)"),
        ({"cross_notes": ["testing: later"]}, "cross_notes.0.dimension: must be one of"),
        ({"cross_notes": ["no dimension"]}, "cross_notes.0.dimension: required field is missing"),
        ({"cross_notes": ["quality:"]}, "cross_notes.0.note: must not be empty"),
        ({"confidance": 0.9}, "confidance: unknown field"),
        ({"hot_path": True}, "hot_path: unknown field; list it in flags"),
        ({"functional_effect": False}, 'functional_effect: unknown field; list "no_functional_'),
        ({"fix_prompt": ["Use hmac."]}, "fix_prompt: must be a string"),
        ({"diff": "+x"}, "diff: unknown field; give the exact replacement lines as fix_lines"),
        ({"replacement_lines": ["x"]}, "replacement_lines: unknown field; use fix_lines"),
    ],
)
def test_a_flat_payload_is_rejected_in_its_own_names(
    changes: dict[str, object], expected: str
) -> None:
    """Reasons name the fields the model sent, never the nested form's it did not."""
    reason = _reason(_flat(**changes), file_lines=CHECKOUT)
    assert expected in reason
    assert "triage" not in reason and "anchor" not in reason and "fix." not in reason
    assert "priority" not in reason


@pytest.mark.parametrize(
    ("nested", "expected"),
    [
        ("triage", "triage: not with the flat fields; give category, severity, effort and flags"),
        ("anchor", "anchor: not with the flat fields; give path, start_line, end_line and side"),
        ("fix", "fix: not with the flat fields; give the exact replacement lines as fix_lines"),
    ],
)
def test_a_payload_mixing_the_forms_is_rejected_with_what_to_send(
    nested: str, expected: str
) -> None:
    """Nested objects in a flat payload are refused even when the flat fields are complete:
    which of the two says the truth would be a guess."""
    reason = _reason(_flat(**{nested: _payload()[nested]}), file_lines=CHECKOUT)
    assert reason.startswith(expected)
    assert len(parse_node_payload(_flat(**{nested: {}})).problems) == 1  # nothing else


def test_the_nested_form_is_still_accepted_as_it_was() -> None:
    """MCP clients send it, and a model on a bad day: it comes through the lifting untouched."""
    lifted = lift_flat_payload(_payload())
    assert lifted.payload == _payload() and not lifted.flat and not lifted.problems
    assert _accepted(_payload()).priority is Priority.P1


# Valid nested payloads the flat form can say: a fix is exact lines or nothing (the flat form
# has no diff or fix prompt, which models are no longer offered).
_enum = st.sampled_from
_text = st.text(max_size=20)
_anchors = st.tuples(
    _enum(["reviews/x.py", "./reviews//auth.py"]),
    st.integers(1, 40),
    st.integers(0, 40),
    _enum(["RIGHT", "LEFT"]),
).map(lambda a: {"path": a[0], "start_line": a[1], "end_line": a[1] + a[2], "side": a[3]})
_flags = {
    name: st.booleans()
    for name in ("exploitable_externally", "hot_path", "critical_path", "functional_effect")
}
_nested_payloads = st.fixed_dictionaries(
    {
        "type": _enum(["bug", "suggestion", "recommendation", "question", "ticket"]),
        "priority": _enum(["P0", "P1", "P2", "P3"]),
        "triage": st.fixed_dictionaries(
            {
                "category": _enum([c.value for c in Category]),
                "severity": _enum(["critical", "high", "medium", "low"]),
                "effort": _enum(["small", "medium", "large"]),
            },
            optional=_flags,
        ),
        "confidence": st.floats(0, 1),
        "title": st.text(min_size=1, max_size=30).filter(str.strip),
        "body": _text,
    },
    optional={
        "reasoning": _text,
        "anchor": _anchors,
        "fix": st.fixed_dictionaries(
            {}, optional={"replacement_lines": st.lists(_text, max_size=3), "fix_prompt": _text}
        ).filter(bool),
        "map_anchor": _text,
        "cross_notes": st.lists(
            st.fixed_dictionaries(
                {
                    "dimension": _enum(["requirements", "quality", "security", "performance"]),
                    "note": st.text(min_size=1, max_size=20),
                }
            ),
            max_size=3,
        ),
        "requirement_gap": _enum(["missing_feature", "scope_creep"]),
    },
)


@given(_nested_payloads)
def test_any_nested_payload_in_the_flat_form_lifts_back_to_an_equal_node(
    nested: dict[str, object],
) -> None:
    flat = flat_finding(nested)
    assert not set(flat) & {"triage", "anchor", "fix"}
    lifted = lift_flat_payload(flat)
    assert lifted.flat and not lifted.problems
    assert NodePayload.model_validate(lifted.payload) == NodePayload.model_validate(nested)
    assert _accepted(flat) == _accepted(nested)


_flat_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 50),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.one_of(st.text(max_size=12), st.integers(), st.none()), max_size=3),
    st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=2),
)


@given(
    st.dictionaries(
        st.sampled_from(
            [*node_tool_schema()["properties"], "priority", "triage", "anchor", "fix", "other"]
        ),
        _flat_values,
        max_size=12,
    )
)
def test_any_payload_is_accepted_or_rejected_with_reasons_never_raised(
    raw: dict[str, object],
) -> None:
    result = parse_node_payload(raw, file_lines=CHECKOUT)
    assert isinstance(result, Accepted) or all(result.problems)
