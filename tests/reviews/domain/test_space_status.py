"""The space status, decided from facts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.space_status import (
    HAPPY_PATH,
    SpaceFacts,
    SpaceStatus,
    can_execute_publish,
    can_request_publish,
    publish_facts_matter,
    publish_refusal,
    space_status,
    stepper,
)

ROUND_STATES = [None, "pending", "running", "finished", "failed", "cancelled", "superseded"]
facts = st.builds(
    SpaceFacts,
    newest_round=st.sampled_from(ROUND_STATES),
    publish_pending=st.booleans(),
    newest_published=st.booleans(),
    closed_reason=st.sampled_from(["", "merged", "closed", "done"]),
)


@pytest.mark.parametrize(
    ("given_facts", "status"),
    [
        (SpaceFacts(), SpaceStatus.REQUESTED),
        (SpaceFacts("pending"), SpaceStatus.REQUESTED),
        (SpaceFacts("running"), SpaceStatus.IN_PROGRESS),
        (SpaceFacts("finished"), SpaceStatus.REVIEWED),
        (SpaceFacts("finished", publish_pending=True), SpaceStatus.AWAITING_APPROVAL),
        (SpaceFacts("finished", newest_published=True), SpaceStatus.COMPLETED),
        (SpaceFacts("failed"), SpaceStatus.FAILED),
        (SpaceFacts("cancelled"), SpaceStatus.CANCELLED),
        (SpaceFacts("running", closed_reason="merged"), SpaceStatus.COMPLETED),
        # A push after the publish: the new round is what the status speaks of.
        (SpaceFacts("running", newest_published=False), SpaceStatus.IN_PROGRESS),
    ],
)
def test_the_facts_decide_the_status(given_facts: SpaceFacts, status: SpaceStatus) -> None:
    assert space_status(given_facts) is status


@given(facts, st.booleans(), st.booleans())
def test_the_publish_facts_are_read_only_where_they_can_change_the_status(
    f: SpaceFacts, pending: bool, published: bool
) -> None:
    """The service skips two reads when they would not matter: then no value of them changes
    the status."""
    if publish_facts_matter(newest_round=f.newest_round, closed_reason=f.closed_reason):
        return
    other = SpaceFacts(f.newest_round, pending, published, f.closed_reason)
    assert space_status(other) is space_status(f)


@given(facts)
def test_awaiting_approval_means_somebody_asked(f: SpaceFacts) -> None:
    """Nobody asked → never "awaiting approval"; a closed PR → always completed."""
    status = space_status(f)
    if status is SpaceStatus.AWAITING_APPROVAL:
        assert f.publish_pending
    if f.closed_reason:
        assert status is SpaceStatus.COMPLETED


@given(facts)
def test_a_publish_is_offered_only_on_a_ready_unpublished_verdict(f: SpaceFacts) -> None:
    status = space_status(f)
    if can_request_publish(status):
        assert f.newest_round == "finished" and not f.publish_pending
        assert not f.newest_published and not f.closed_reason
    else:
        assert publish_refusal(status)  # every refusal says why


def test_every_status_has_words() -> None:
    assert all(s.label and "_" not in s.label for s in SpaceStatus)
    assert [s for s in SpaceStatus if can_execute_publish(s)] == [
        SpaceStatus.REVIEWED,
        SpaceStatus.AWAITING_APPROVAL,
    ]


@given(st.sampled_from(list(SpaceStatus)))
def test_the_stepper_shows_the_status_once_and_outcomes_only_when_they_happen(status):
    steps = stepper(status)
    assert steps.count(status) == 1
    outcomes = {SpaceStatus.FAILED, SpaceStatus.CANCELLED}
    assert set(steps) & outcomes <= {status}
    if status in outcomes:
        assert steps[-1] is status and SpaceStatus.COMPLETED not in steps
    else:
        assert steps == HAPPY_PATH
