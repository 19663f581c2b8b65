"""Axis results: token axes, deterministic axes, gates (DESIGN.md §3.6)."""

from __future__ import annotations

import pytest

from reviews.domain.axes import (
    axis_floor,
    deterministic_axis_result,
    gating_axes,
    token_axes,
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
