"""The add_review_node payload: schema, path safety, checkout checks."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.nodes import (
    Accepted,
    NodePayload,
    Rejected,
    node_tool_schema,
    node_view_from_payload,
    normalise_anchor_path,
    parse_node_payload,
    redact_payload,
)
from reviews.domain.types import Category, NodeStatus, Priority, Side

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
    """Missing required fields are all reported, not just the first."""
    reason = _reason({"reasoning": "only thoughts"})
    for field in ("type", "priority", "triage", "confidence", "title", "body"):
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


def test_it_exposes_a_tool_schema_with_reasoning_first() -> None:
    """The model writes its reasoning before the verdict fields, so it comes first."""
    schema = node_tool_schema()
    assert next(iter(schema["properties"])) == "reasoning"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"type", "priority", "triage", "confidence", "title", "body"}
    # It goes out with every turn: no generated titles, but the `title` field stays.
    assert '"title": "' not in json.dumps(schema) and "title" in schema["properties"]
    assert schema["properties"]["anchor"]["properties"]["path"]["type"] == "string"


def test_its_tool_schema_is_compact_and_names_every_field_and_value() -> None:
    """It goes out with every reviewer call: definitions inlined, no defaults or nullable
    branches, ≲ 2k characters; yet every field of the payload and every enum value is there."""
    schema = node_tool_schema()
    text = json.dumps(schema, separators=(",", ":"))
    assert len(text) <= 2100
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
