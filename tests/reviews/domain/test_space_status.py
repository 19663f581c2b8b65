"""The space status ladder."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.space_status import (
    LADDER,
    SpaceStatus,
    SpaceTransitionError,
    can_publish,
    check_space_transition,
)


def test_it_climbs_the_ladder_one_step_at_a_time():
    for current, target in itertools.pairwise(LADDER):
        check_space_transition(current, target)
    with pytest.raises(SpaceTransitionError):
        check_space_transition(SpaceStatus.REQUESTED, SpaceStatus.AWAITING_APPROVAL)
    with pytest.raises(SpaceTransitionError):
        check_space_transition(SpaceStatus.REQUESTED, SpaceStatus.COMPLETED)


@given(st.lists(st.sampled_from(list(SpaceStatus)), max_size=20))
def test_it_never_reaches_completed_without_awaiting_approval_first(targets):
    """Whatever sequence is attempted, completed is only entered from awaiting_approval."""
    status = SpaceStatus.REQUESTED
    for target in targets:
        try:
            check_space_transition(status, target)
        except SpaceTransitionError:
            continue
        if target is SpaceStatus.COMPLETED:
            assert status is SpaceStatus.AWAITING_APPROVAL
        status = target


def test_publishing_is_only_possible_while_awaiting_approval():
    assert [s for s in SpaceStatus if can_publish(s)] == [SpaceStatus.AWAITING_APPROVAL]
