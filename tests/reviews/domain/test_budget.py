"""Token budgets: the planner drops the follow-up, then panel checks, then reviewers, keeps one
reviewer while anything is left, and every skip's reason is true."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.budget import (
    DROP_ORDER,
    BudgetLeft,
    CallKind,
    PlannedCall,
    panel_estimate,
    panel_ranks,
    plan_within,
    reviewer_estimate,
    reviewer_rank,
    reviewer_value_order,
)
from reviews.domain.types import Dimension, NodeType, NodeView, Priority, Severity


@st.composite
def call_lists(draw):
    kinds = draw(st.lists(st.sampled_from(list(CallKind)), max_size=12))
    return [
        PlannedCall(
            kind=kind,
            key=f"{kind.value}-{i}",
            label=f"{kind.value} {i}",
            estimate=draw(st.integers(min_value=0, max_value=20_000)),
            rank=draw(st.integers(min_value=0, max_value=20)),
        )
        for i, kind in enumerate(kinds)
    ]


budgets = st.builds(
    BudgetLeft,
    round_left=st.integers(min_value=-5_000, max_value=100_000),
    pr_left=st.none() | st.integers(min_value=-5_000, max_value=100_000),
)


@given(calls=call_lists(), budget=budgets, reserve=st.integers(min_value=0, max_value=10_000))
def test_every_call_is_kept_or_skipped_once(calls, budget, reserve):
    plan = plan_within(budget, calls, reserve=reserve)
    kept = [c.key for c in plan.kept]
    skipped = [s.call.key for s in plan.skipped]
    assert sorted(kept + skipped) == sorted(c.key for c in calls)


@given(calls=call_lists(), budget=budgets, reserve=st.integers(min_value=0, max_value=10_000))
def test_the_kept_calls_fit_unless_only_the_protected_reviewer_is_over(calls, budget, reserve):
    plan = plan_within(budget, calls, reserve=reserve)
    available = max(budget.left - reserve, 0)
    if plan.estimate > available:
        # Only the one reviewer a round keeps may go over (its run's cap still holds it), beside
        # calls that cost nothing (an analyzer).
        paid = [c for c in plan.kept if c.estimate > 0]
        assert len(paid) == 1 and paid[0].kind is CallKind.REVIEWER
        assert budget.left > 0


@given(calls=call_lists(), budget=budgets, reserve=st.integers(min_value=0, max_value=10_000))
def test_every_skip_reason_is_true(calls, budget, reserve):
    plan = plan_within(budget, calls, reserve=reserve)
    available = max(budget.left - reserve, 0)
    for skip in plan.skipped:
        assert skip.call.estimate > skip.left
        assert skip.left == max(available - plan.estimate, 0)
        assert skip.reason.startswith(f"{skip.call.label} skipped: {budget.binding} budget")
        assert f"est. {skip.call.estimate:,} tokens, {skip.left:,} left" in skip.reason


@given(calls=call_lists(), budget=budgets, reserve=st.integers(min_value=0, max_value=10_000))
def test_a_more_valuable_call_is_skipped_for_a_lesser_one_only_when_it_does_not_fit(
    calls, budget, reserve
):
    plan = plan_within(budget, calls, reserve=reserve)

    def order(c):
        return DROP_ORDER.index(c.kind), -c.rank

    for skip in plan.skipped:
        for kept in plan.kept:
            if order(kept) < order(skip.call):  # a lesser call kept over this one
                assert skip.call.estimate > skip.left


@given(calls=call_lists(), budget=budgets)
def test_a_round_keeps_its_most_valuable_reviewer_while_any_budget_is_left(calls, budget):
    plan = plan_within(budget, calls, reserve=50_000)
    reviewers = [c for c in calls if c.kind is CallKind.REVIEWER]
    kept = [c for c in plan.kept if c.kind is CallKind.REVIEWER]
    if reviewers and budget.left > 0:
        best = min(c.rank for c in reviewers)
        assert any(c.rank == best for c in kept)
    if budget.left <= 0:
        assert [c for c in plan.kept if c.estimate > 0] == []


@given(calls=call_lists())
def test_nothing_is_skipped_when_everything_fits(calls):
    total = sum(c.estimate for c in calls)
    plan = plan_within(BudgetLeft(total + 10, None), calls, reserve=10)
    assert plan.skipped == ()


def test_the_follow_up_goes_first_then_the_least_important_panel_check_then_reviewers():
    calls = [
        PlannedCall(CallKind.REVIEWER, "implementation", "implementation reviewer", 10_000, 0),
        PlannedCall(CallKind.REVIEWER, "quality", "quality reviewer", 10_000, 6),
        PlannedCall(CallKind.PANEL, "n1", "panel check of P0", 4_000, 0),
        PlannedCall(CallKind.PANEL, "n2", "panel check of P3", 4_000, 1),
        PlannedCall(CallKind.FOLLOW_UP, "security", "follow-up security reviewer", 9_100, 0),
    ]
    assert [s.call.key for s in plan_within(BudgetLeft(28_000), calls).skipped] == ["security"]
    assert [s.call.key for s in plan_within(BudgetLeft(25_000), calls).skipped] == [
        "security",
        "n2",
    ]
    plan = plan_within(BudgetLeft(11_000), calls)
    assert plan.kept_keys == {"implementation"}
    assert [s.call.key for s in plan.skipped] == ["security", "n2", "n1", "quality"]


def test_the_reason_names_the_budget_that_binds():
    follow_up = PlannedCall(CallKind.FOLLOW_UP, "security", "follow-up security reviewer", 9_100)
    plan = plan_within(BudgetLeft(round_left=50_000, pr_left=4_000), [follow_up])
    assert [s.reason for s in plan.skipped] == [
        "follow-up security reviewer skipped: pull request budget would be exceeded "
        "(est. 9,100 tokens, 4,000 left)"
    ]
    plan = plan_within(BudgetLeft(round_left=0, pr_left=None), [follow_up])
    assert plan.skipped[0].reason == (
        "follow-up security reviewer skipped: round budget exhausted (est. 9,100 tokens, 0 left)"
    )


def test_the_most_valuable_reviewer_depends_on_the_change():
    assert reviewer_value_order(high_risk=True)[0] is Dimension.SECURITY
    assert reviewer_value_order(high_risk=False)[0] is Dimension.IMPLEMENTATION
    assert sorted(reviewer_value_order(high_risk=True)) == sorted(Dimension)
    assert sorted(reviewer_value_order(high_risk=False)) == sorted(Dimension)
    assert reviewer_rank("security", high_risk=True) < reviewer_rank(
        "implementation", high_risk=True
    )
    # A custom reviewer ranks just after the built-in one of its dimension.
    assert (
        reviewer_rank("quality", high_risk=False)
        < reviewer_rank("quality", high_risk=False, builtin=False)
        < reviewer_rank("performance", high_risk=False)
    )


def test_estimates_grow_with_what_is_sent():
    assert reviewer_estimate(5_000) > reviewer_estimate(1_000) > 0
    assert panel_estimate(800) > panel_estimate(100) > 0


def test_the_most_severe_finding_is_checked_longest():
    def node(id, priority, confidence=0.9):
        return NodeView(
            id=id,
            agent="impl",
            type=NodeType.BUG,
            priority=priority,
            confidence=confidence,
            severity=Severity.MEDIUM,
            path="a.py",
            start_line=1,
            end_line=1,
        )

    ranks = panel_ranks([node("a", Priority.P3), node("b", Priority.P0), node("c", Priority.P2)])
    assert sorted(ranks, key=ranks.__getitem__) == ["b", "c", "a"]
