"""A dismissal that changes what the team is told needs a reason, and a workspace may keep
dismissing a P0 for approvers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.consensus import Action
from reviews.domain.decisions import (
    REASON_MAX,
    REASON_REQUIRED,
    approver_problem,
    needs_approver,
    reason_problem,
)
from reviews.domain.types import Priority

blank = st.text(alphabet=" \t\n", max_size=5)
words = st.text(min_size=1, max_size=200).filter(lambda s: s.strip())


@given(st.sampled_from(list(Priority)), blank)
def test_a_blank_reason_is_refused_only_for_a_dismissed_p0_or_p1(priority, reason):
    problem = reason_problem(Action.DISMISS, priority, reason)
    assert (problem is not None) == (priority in REASON_REQUIRED)
    if problem:
        assert f"Dismissing a {priority} finding needs a reason" in problem


@given(st.sampled_from(list(Action)), st.sampled_from(list(Priority)), words)
def test_any_reason_in_bounds_is_enough(action, priority, reason):
    assert reason_problem(action, priority, reason) is None


@given(st.sampled_from(list(Action)), st.sampled_from(list(Priority)), blank)
def test_other_decisions_need_none(action, priority, reason):
    if action != Action.DISMISS:
        assert reason_problem(action, priority, reason) is None


def test_an_over_long_reason_is_refused():
    problem = reason_problem(Action.DISMISS, Priority.P3, "x" * (REASON_MAX + 1))
    assert problem is not None and "at most 2,000 characters" in problem


@given(st.sampled_from(list(Action)), st.sampled_from(list(Priority)), st.booleans(), st.booleans())
def test_the_approver_rule_refuses_only_a_non_approver_dismissing_a_p0(
    action, priority, rule, approver
):
    """The workspace's rule applies to dismissing a P0 and nothing else; an approver (or
    above) passes, anyone else is refused with words that say who may."""
    problem = approver_problem(action, priority, approver_rule=rule, is_approver=approver)
    applies = needs_approver(action, priority, approver_rule=rule)
    assert applies == (rule and action == Action.DISMISS and priority is Priority.P0)
    assert (problem is not None) == (applies and not approver)
    if problem:
        assert "needs an approver" in problem and priority in problem
