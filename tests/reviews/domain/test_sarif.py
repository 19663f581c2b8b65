"""The pure SARIF rules: the priority table (the analyzers' own), which results are on the
change, and an export that is valid SARIF 2.1.0 whatever the findings."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews import sarif as sarif_schema
from reviews.agents.ruff_analyzer import ruff_mapping
from reviews.domain.precision import unconfirmed_pattern
from reviews.domain.sarif import (
    FINGERPRINT_KEY,
    SarifResult,
    changed_path,
    on_change,
    rank,
    read_runs,
    result_payload,
    sarif_log,
)
from reviews.domain.types import Category, NodeStatus, NodeType, NodeView, Priority


def _result(**kw: Any) -> SarifResult:
    base: dict[str, Any] = {
        "rule_id": "X1",
        "level": "warning",
        "message": "m",
        "uri": "a.py",
        "start_line": 3,
        "end_line": 3,
        "cwe": None,
        "security": False,
        "security_severity": None,
        "precision": None,
        "help_uri": None,
    }
    return SarifResult(**(base | kw))


@pytest.mark.parametrize(
    ("result", "mapping", "expected"),
    [
        # A rule id of the severity table: security, at least the class's floor.
        (_result(rule_id="S608", level="note"), None, (Priority.P1, Category.SECURITY)),
        (_result(rule_id="B602", level="error"), None, (Priority.P1, Category.SECURITY)),
        # Another tool's rule, known by its CWE; GitHub's severity bands start it.
        (
            _result(rule_id="py/sql-injection", cwe=89, security_severity=9.8),
            None,
            (Priority.P0, Category.SECURITY),
        ),
        (_result(rule_id="js/weak-hash", cwe=327, security_severity=9.8), None, None),
        # Quorum's own ruff table for ruff's other rules: F401 is a P3 whatever ruff's level.
        (
            _result(rule_id="F401", level="error"),
            ruff_mapping,
            (Priority.P3, Category.MAINTAINABILITY),
        ),
        # Unknown rules go by level.
        (_result(level="error"), None, (Priority.P1, Category.CORRECTNESS)),
        (_result(level="warning"), None, (Priority.P2, Category.CORRECTNESS)),
        (_result(level="note"), None, (Priority.P3, Category.MAINTAINABILITY)),
        (_result(level="note", security=True), None, (Priority.P3, Category.SECURITY)),
    ],
)
def test_the_priority_table(result, mapping, expected) -> None:
    ranked = rank(result, mapping)
    if expected is None:  # weak cryptography stops at P1, like bandit's own label
        assert ranked.priority is Priority.P1
        return
    assert (ranked.priority, ranked.category) == expected


def test_read_runs_takes_rule_metadata_and_defaults() -> None:
    log = {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "Semgrep",
                        "rules": [
                            {
                                "id": "r1",
                                "defaultConfiguration": {"level": "error"},
                                "properties": {"tags": ["CWE-78: OS Command Injection"]},
                            }
                        ],
                    }
                },
                "results": [
                    {
                        "ruleId": "r1",
                        "message": {"text": "shell"},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": "file:///ci/src/app/x.py"},
                                    "region": {"startLine": 7, "endLine": 9},
                                }
                            }
                        ],
                    }
                ],
            }
        ],
    }
    assert sarif_schema.schema_error(log) is None
    (run,) = read_runs(log)
    (result,) = run.results
    assert (run.tool, result.level, result.cwe, result.start_line, result.end_line) == (
        "Semgrep",
        "error",
        78,
        7,
        9,
    )
    changed = {"app/x.py": frozenset({9}), "x.py": frozenset({7})}
    # The longest changed path the absolute URI ends with.
    assert changed_path(result.uri, changed) == "app/x.py"
    assert on_change(result, "app/x.py", changed)
    assert not on_change(result, "app/x.py", {"app/x.py": frozenset({6, 10})})
    payload, evidence = result_payload(result, tool=run.tool, path="app/x.py")
    assert payload["priority"] == "P1" and payload["triage"]["category"] == "security"
    assert payload["anchor"] == {"path": "app/x.py", "start_line": 7, "end_line": 9}
    assert evidence == {"tool": "Semgrep", "rule": "r1", "high_precision": False}


@settings(max_examples=100, deadline=None)
@given(
    st.text(min_size=0, max_size=30),
    st.dictionaries(
        st.sampled_from(["a.py", "b/c.py", "d/e/f.go"]),
        st.frozensets(st.integers(1, 50), max_size=10),
    ),
    st.integers(1, 60),
    st.integers(0, 5),
)
def test_a_result_on_the_change_is_always_on_an_added_line(
    prefix: str, changed: dict[str, frozenset[int]], start: int, span: int
) -> None:
    for path in ["a.py", "b/c.py", "d/e/f.go", "zz.py"]:
        result = _result(uri=f"{prefix}/{path}", start_line=start, end_line=start + span)
        found = changed_path(result.uri, changed)
        if found is not None:
            assert f"{prefix}/{path}".endswith(found)
        if on_change(result, found, changed):
            assert found in changed
            assert any(line in changed[found] for line in range(start, start + span + 1))


def test_a_sarif_finding_is_a_pattern_match_that_needs_a_confirmation() -> None:
    view = NodeView(
        id="1",
        agent="sarif:semgrep",
        stream="Semgrep",
        type=NodeType.BUG,
        priority=Priority.P0,
        category=Category.SECURITY,
        confidence=0.9,
        title="r1: shell",
        analyzer_rule="r1",
        credited_agents=("bandit",),
    )
    assert unconfirmed_pattern(view)


# -- out ---------------------------------------------------------------------------------------

_texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
_nodes = st.fixed_dictionaries(
    {
        "id": st.integers(1, 10**6),
        "priority": st.sampled_from([p.value for p in Priority]),
        "triage": st.fixed_dictionaries({"category": st.sampled_from([c.value for c in Category])}),
        "status": st.sampled_from([s.value for s in NodeStatus]),
        "title": _texts.filter(bool),
        "body": _texts,
        "confidence": st.floats(0, 1),
        "reviewers": st.lists(_texts, max_size=3),
        "fingerprint": st.text("0123456789abcdef", min_size=0, max_size=64),
        "duplicate_of": st.none() | st.integers(1, 5),
        "anchor": st.none()
        | st.fixed_dictionaries(
            {
                "path": _texts.filter(bool),
                "start_line": st.integers(1, 10**5),
                "end_line": st.integers(1, 10**5),
                "side": st.sampled_from(["RIGHT", "LEFT"]),
            }
        ),
        "tags": st.just({})
        | st.fixed_dictionaries(
            {"analyzer": st.fixed_dictionaries({"rule": st.sampled_from(["B608", "F401"])})}
        ),
    }
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_nodes, max_size=8))
def test_the_export_is_valid_sarif_whatever_the_findings(nodes: list[dict[str, Any]]) -> None:
    review = {"nodes": nodes, "pull_request": {"repository": "acme/x", "head_sha": "a" * 40}}
    log = sarif_log(review, schema_uri=sarif_schema.SCHEMA_URI)
    assert sarif_schema.schema_error(log) is None
    results = log["runs"][0]["results"]
    assert len(results) == sum(n["duplicate_of"] is None for n in nodes)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    for result, node in zip(results, [n for n in nodes if n["duplicate_of"] is None], strict=True):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert ("suppressions" in result) == (node["status"] in ("dismissed", "resolved"))
        if node["fingerprint"]:
            assert result["partialFingerprints"] == {FINGERPRINT_KEY: node["fingerprint"]}
