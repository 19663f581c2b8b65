"""Axis results: token axes, deterministic axes, gates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.axes import (
    AnalyzerRun,
    axis_floor,
    deterministic_axes,
    deterministic_axis_result,
    gating_axes,
    token_axes,
    token_axes_detailed,
    token_axis_result,
)
from reviews.domain.types import (
    AxisName,
    AxisResult,
    Category,
    Dimension,
    NodeStatus,
    NodeType,
    NodeView,
    Priority,
    VerdictLevel,
)


def _node(priority: Priority, category: Category = Category.SECURITY, **kw: object) -> NodeView:
    return NodeView(
        id="n",
        agent="arch",
        type=NodeType.BUG,
        priority=priority,
        confidence=0.8,
        category=category,
        **kw,
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ran", "note", "findings", "expected"),
    [
        (False, "auth reviewed", [], AxisResult.UNAVAILABLE),
        (False, None, [_node(Priority.P0)], AxisResult.UNAVAILABLE),
        (True, None, [], AxisResult.PARTIAL),
        (True, "   ", [], AxisResult.PARTIAL),
        (True, "auth and token handling reviewed - no issue", [], AxisResult.PASS),
        (True, "reviewed", [_node(Priority.P2)], AxisResult.WARN),
        (True, "reviewed", [_node(Priority.P1)], AxisResult.FAIL),
        (True, "reviewed", [_node(Priority.P1, status=NodeStatus.DISMISSED)], AxisResult.PASS),
        (True, "reviewed", [_node(Priority.P0, duplicate_of="x")], AxisResult.PASS),
    ],
)
def test_it_derives_a_token_axis_from_reviewers_and_findings(
    ran: bool, note: str | None, findings: list[NodeView], expected: AxisResult
) -> None:
    """Silence is not validation: pass needs a reviewer that ran and said what it covered."""
    assert token_axis_result(reviewer_ran=ran, coverage_note=note, findings=findings) is expected


def test_it_maps_dimensions_and_categories_onto_token_axes() -> None:
    """security ← the security reviewer; no security reviewer → unavailable."""
    results = token_axes(
        coverage={Dimension.IMPLEMENTATION: "logic reviewed", Dimension.QUALITY: None},
        nodes=[_node(Priority.P3, Category.TESTING)],
    )
    assert results == {
        AxisName.CORRECTNESS: AxisResult.PASS,
        AxisName.SECURITY: AxisResult.UNAVAILABLE,
        AxisName.TEST_GAP: AxisResult.WARN,
    }


def test_it_reports_performance_unavailable_unless_submitted() -> None:
    """Nothing computes performance: no submission, no result."""
    assert deterministic_axis_result(None) is AxisResult.UNAVAILABLE
    assert deterministic_axis_result(AxisResult.PASS) is AxisResult.PASS


def test_it_drops_token_axes_from_the_gates() -> None:
    """Only deterministic axes gate."""
    assert gating_axes(set(AxisName)) == {
        AxisName.VISUAL,
        AxisName.API_CONTRACT,
        AxisName.PERFORMANCE,
    }


def test_it_reports_the_strictest_gate() -> None:
    """A failure outranks a partial; clear gates give no floor."""
    floor = axis_floor(
        {AxisName.VISUAL: AxisResult.PARTIAL, AxisName.API_CONTRACT: AxisResult.FAIL},
        gated={AxisName.VISUAL, AxisName.API_CONTRACT},
    )
    assert floor is not None
    assert (floor.level, floor.rule) == (VerdictLevel.BLOCK, "gated axis apiContract failed")
    assert axis_floor({AxisName.VISUAL: AxisResult.WARN}, gated={AxisName.VISUAL}) is None


# -- analyzers as evidence -----------------------------------------------------------------------

BANDIT_RUN = AnalyzerRun("bandit", frozenset({AxisName.SECURITY}), ("a.py", "b.py"), "bandit")
SECRETS_RUN = AnalyzerRun("secrets", frozenset({AxisName.SECURITY}), ("a.py", "b.py", "c.md"))
RUFF_RUN = AnalyzerRun("ruff", frozenset({AxisName.CORRECTNESS}), ("a.py",), "ruff rules F")


def test_an_analyzer_that_ran_clean_is_explicit_coverage() -> None:
    axes = token_axes_detailed(coverage={}, nodes=[], analyzers=[BANDIT_RUN, SECRETS_RUN])
    result, details = axes[AxisName.SECURITY]
    assert result is AxisResult.PASS
    assert [(a["tool"], a["files"], a["findings"]) for a in details["analyzers"]] == [
        ("bandit", ["a.py", "b.py"], 0),
        ("secrets", ["a.py", "b.py", "c.md"], 0),
    ]
    # Nobody ran for correctness: silence is not validation.
    result, details = axes[AxisName.CORRECTNESS]
    assert result is AxisResult.UNAVAILABLE and "no reviewer or analyzer" in details["reason"]


def test_analyzer_findings_warn_or_fail_their_axis_and_are_counted_per_tool() -> None:
    p1 = _node(Priority.P1, stream="bandit")
    p2 = _node(Priority.P2, category=Category.CORRECTNESS, stream="ruff")
    axes = token_axes_detailed(
        coverage={}, nodes=[p1, p2], analyzers=[BANDIT_RUN, SECRETS_RUN, RUFF_RUN]
    )
    result, details = axes[AxisName.SECURITY]
    assert result is AxisResult.FAIL
    assert {a["tool"]: a["findings"] for a in details["analyzers"]} == {"bandit": 1, "secrets": 0}
    assert axes[AxisName.CORRECTNESS][0] is AxisResult.WARN


def test_an_analyzer_that_checked_no_file_covers_nothing() -> None:
    idle = AnalyzerRun("bandit", frozenset({AxisName.SECURITY}), ())
    assert token_axes_detailed(coverage={}, nodes=[], analyzers=[idle])[AxisName.SECURITY][0] is (
        AxisResult.UNAVAILABLE
    )


@given(
    st.dictionaries(
        st.sampled_from(list(Dimension)), st.one_of(st.none(), st.just("checked all")), max_size=3
    ),
    st.lists(st.sampled_from([Priority.P0, Priority.P1, Priority.P2, Priority.P3]), max_size=4),
    st.lists(st.sampled_from([BANDIT_RUN, SECRETS_RUN, RUFF_RUN]), max_size=3),
)
def test_analyzers_only_ever_add_coverage(coverage, priorities, runs) -> None:
    """With no analyzer the result is the model-only `token_axes`; an analyzer never turns a
    finding's fail or warn into a pass, and never makes a covered axis unavailable."""
    nodes = [_node(p) for p in priorities]
    without = token_axes(coverage=coverage, nodes=nodes)
    assert {a: r for a, (r, _) in token_axes_detailed(coverage=coverage, nodes=nodes).items()} == (
        without
    )
    with_runs = token_axes_detailed(coverage=coverage, nodes=nodes, analyzers=runs)
    for axis, (result, _) in with_runs.items():
        if without[axis] in (AxisResult.FAIL, AxisResult.WARN):
            assert result is without[axis]
        if without[axis] is not AxisResult.UNAVAILABLE:
            assert result is not AxisResult.UNAVAILABLE


SUBMITTABLE = [AxisName.VISUAL.value, AxisName.PERFORMANCE.value, AxisName.API_CONTRACT.value]


@given(st.sets(st.sampled_from(SUBMITTABLE)), st.booleans())
def test_deterministic_axes_never_pass_from_nothing_and_never_replace_a_submission(
    submitted: set[str], fast_exit: bool
) -> None:
    out = deterministic_axes(submitted=submitted, fast_exit=fast_exit)
    axes = [axis for axis, _, _ in out]
    assert len(axes) == len(set(axes))
    assert not set(axes) & {AxisName(a) for a in submitted}  # a submitted result stays
    assert set(axes) | {AxisName(a) for a in submitted} == {AxisName(a) for a in SUBMITTABLE}
    for axis, result, details in out:
        assert details["reason"]
        if result is AxisResult.PASS:
            # Only a docs-only or formatting-only change passes, and only the API contract.
            assert fast_exit and axis is AxisName.API_CONTRACT
        else:
            assert result is AxisResult.UNAVAILABLE
            assert details["to_clear"]  # says what would clear the gate


def test_a_fast_exit_passes_the_api_contract_only() -> None:
    out = {axis: result for axis, result, _ in deterministic_axes(submitted=(), fast_exit=True)}
    assert out == {
        AxisName.API_CONTRACT: AxisResult.PASS,
        AxisName.VISUAL: AxisResult.UNAVAILABLE,
        AxisName.PERFORMANCE: AxisResult.UNAVAILABLE,
    }
