"""One review space per pull request, its status ladder and its rounds."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from reviews.domain.space_status import ClosedReason
from reviews.models import PullRequest, ReviewRound, ReviewSpace
from reviews.services.rounds import round_start
from reviews.services.spaces import (
    pull_request_upsert,
    space_close,
    space_get_or_create,
    space_status_refresh,
)
from workspaces.models import Repository


@pytest.fixture
def repository(workspace):
    return Repository.objects.create(workspace=workspace, kind="github", full_name="acme/web")


def test_it_resolves_the_same_space_for_the_same_pull_request(repository):
    pr = pull_request_upsert(repository=repository, number=3, base_ref="main", head_ref="f")
    again = pull_request_upsert(
        repository=repository, number=3, base_ref="main", head_ref="f", title="New title"
    )
    assert pr.pk == again.pk and again.title == "New title"
    assert space_get_or_create(pull_request=pr).pk == space_get_or_create(pull_request=again).pk
    assert ReviewSpace.objects.count() == 1


def test_local_ref_pairs_are_their_own_pull_requests(repository):
    a = pull_request_upsert(repository=repository, base_ref="main", head_ref="feature-a")
    b = pull_request_upsert(repository=repository, base_ref="main", head_ref="feature-b")
    a2 = pull_request_upsert(repository=repository, base_ref="main", head_ref="feature-a")
    assert a.pk == a2.pk != b.pk
    assert PullRequest.objects.count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_callers_get_one_space(workspace_factory):
    ws = workspace_factory()
    repo = Repository.objects.create(workspace=ws, kind="github", full_name="acme/race")
    pr = pull_request_upsert(repository=repo, number=1, base_ref="main", head_ref="f")
    barrier = threading.Barrier(10)
    spaces: list[int] = []
    errors: list[BaseException] = []

    def resolve():
        try:
            barrier.wait()
            spaces.append(space_get_or_create(pull_request=pr).pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=resolve) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(spaces)) == 1 and len(spaces) == 10
    assert ReviewSpace.objects.filter(pull_request=pr).count() == 1


def test_the_status_follows_the_facts(review_factory):
    """The status is what the facts decide: a queued round, a finished one, a person's done."""
    review_round = review_factory()
    space = review_round.space
    assert space_status_refresh(space=space).status == "requested"
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    assert space_status_refresh(space=space).status == "reviewed"
    with pytest.raises(ValueError, match="Say why"):
        space_close(space=space, reason=ClosedReason.DONE, note=" ")
    closed = space_close(space=space, reason=ClosedReason.DONE, note="merged by hand")
    assert (closed.status, closed.closed_reason) == ("completed", "done")


def test_a_new_push_starts_a_new_round_and_goes_back_to_requested(review_factory):
    first = review_factory(head_sha="a" * 40)
    space = first.space
    assert round_start(space=space, head_sha="a" * 40, tier="light").pk == first.pk
    second = round_start(space=space, head_sha="c" * 40, tier="light")
    first.refresh_from_db()
    space.refresh_from_db()
    assert second.number == 2
    assert first.state == ReviewRound.State.SUPERSEDED
    assert space.status == "requested"


@pytest.mark.parametrize("publish", ["none", "pending", "posted"])
def test_a_rounds_move_leaves_the_status_its_facts_decide(review_factory, alice, publish):
    """A round's move reads its space's facts with the space's lock, as they stand once the
    move is written: the status it leaves is the one the facts, read afresh, decide."""
    from datetime import timedelta

    from django.utils import timezone

    from guardrails.models import ApprovalRequest
    from reviews.domain.space_status import space_status
    from reviews.models import PublishRecord
    from reviews.services.rounds import round_transition
    from reviews.services.spaces import space_facts

    review_round = review_factory()
    space = review_round.space
    if publish == "pending":
        ApprovalRequest.objects.create(
            workspace=space.workspace,
            action_class="prPublish",
            requester=alice,
            target_type="reviewspace",
            target_id=str(space.pk),
            target_label=str(space.pull_request),
            payload={"space": space.pk, "round": review_round.number},
            payload_hash="0" * 64,
            expires_at=timezone.now() + timedelta(hours=1),
        )
    elif publish == "posted":
        PublishRecord.objects.create(
            space=space,
            round=review_round,
            selection="all",
            head_sha=review_round.head_sha,
            state=PublishRecord.State.POSTED,
        )
    expected = {"none": "reviewed", "pending": "awaiting_approval", "posted": "completed"}
    for to, status in (("running", "in_progress"), ("finished", expected[publish])):
        assert round_transition(review_round, to)
        space.refresh_from_db()
        assert space.status == status
        assert space_status(space_facts(space)).value == status
