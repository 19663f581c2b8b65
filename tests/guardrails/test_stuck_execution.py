"""No approved request stays `executing` for ever. A real Celery worker is killed while GitHub
holds its publish call; past the execution lease one sweep asks GitHub whether the review with
the request's marker is there (executed) or not (failed, and the round can be requested again).
Meanwhile a new round is published without waiting for the stuck request. What cannot be
looked up waits for an approver, who resolves it with a reason."""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from guardrails.models import ApprovalRequest, AuditEvent, Execution
from guardrails.presence import presence_touch
from guardrails.services.approvals import approval_decide, approval_resolve
from guardrails.services.execution import approvals_settle_stuck
from reviews.models import PublishRecord, ReviewRound
from reviews.pipeline.sweeper import sweep_once
from reviews.services.publishing import publish_request
from reviews.services.rounds import round_start
from reviews.services.spaces import space_status_refresh
from reviews.services.verdicts import round_finalise
from workspaces.rules import RuleError

REVIEWS = r"/repos/acme/app/pulls/5/reviews"


def _wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def _ask_and_approve(space, bob, vera):
    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    asked = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert asked.outcome == "pending", asked.reason
    approval_decide(request=asked.request, approver=vera, decision="approve", reason="ok")
    return asked.request


def _new_round(space, review_round):
    second = round_start(space=space, head_sha=review_round.head_sha, tier="light")
    round_finalise(review_round=second)
    ReviewRound.objects.filter(pk=second.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)
    return second


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("applied", [True, False], ids=["posted", "lost"])
def test_a_worker_killed_during_the_github_call_is_settled_after_its_lease(
    publishable, fake_github, worker_factory, settings, applied
):
    space, review_round, bob, vera = publishable
    worker = worker_factory(
        GITHUB_API_URL=fake_github.base_url,
        GITHUB_TOKEN="ghs_app",
        GITHUB_APP_ID="",
        QUORUM_SWEEP_SECONDS="0",
    )
    held = fake_github.hold("POST", REVIEWS, apply=applied)
    request = _ask_and_approve(space, bob, vera)
    assert held.entered.wait(60), "the worker never called GitHub"
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    held.release()
    if applied:  # GitHub took it; the answer went to a dead worker
        _wait_for(lambda: len(fake_github.reviews("acme", "app", 5)) == 1, timeout=10)
    request.refresh_from_db()
    assert request.status == "executing"

    # A new round is published while the old request is stuck: it does not wait for it.
    if applied:
        second = _new_round(space, review_round)
        assert space.__class__.objects.get(pk=space.pk).status == "reviewed"
        newer = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
        assert newer.outcome == "pending", newer.reason
        assert newer.request.payload["round"] == second.number

    # Within the lease nothing is decided; after it, one sweep settles the request.
    assert approvals_settle_stuck() == 0
    settings.QUORUM_APPROVAL_LEASE_SECONDS = 3
    Execution.objects.filter(request=request).update(
        started_at=timezone.now() - timedelta(seconds=3)
    )
    sweep_once(force=True)
    request.refresh_from_db()
    if applied:
        [review] = fake_github.reviews("acme", "app", 5)
        assert request.status == "executed"
        assert request.result["github_review_id"] == review["id"]
        record = PublishRecord.objects.get(approval_request=request)
        assert record.state == "posted" and record.github_review_id == review["id"]
        assert AuditEvent.objects.filter(action="prPublish.executed").count() == 1
    else:
        assert not fake_github.reviews("acme", "app", 5)
        assert request.status == "failed" and "request it again" in request.error
        # Retryable: the same round can be requested again, and nothing blocks it.
        assert space.__class__.objects.get(pk=space.pk).status == "reviewed"
        again = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
        assert again.outcome == "pending", again.reason


@pytest.fixture
def stuck(publishable, fake_github):
    """An approved publish whose worker died during the call: executing, its answer lost."""
    space, review_round, bob, vera = publishable
    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    asked = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    request = asked.request
    ApprovalRequest.objects.filter(pk=request.pk).update(
        status="executing", decided_at=timezone.now()
    )
    Execution.objects.create(request=request)
    return space, review_round, bob, vera, request


@pytest.mark.django_db
def test_an_approver_resolves_an_execution_github_cannot_confirm(
    stuck, fake_github, settings, member_factory
):
    space, _, bob, vera, request = stuck
    fake_github.inject("503", count=10, method="GET", path=REVIEWS)
    with pytest.raises(RuleError, match="still running within its lease"):
        approval_resolve(request=request, actor=vera, executed=False, reason="not on GitHub")
    settings.QUORUM_APPROVAL_LEASE_SECONDS = 3
    Execution.objects.filter(request=request).update(
        started_at=timezone.now() - timedelta(seconds=5)
    )
    assert approvals_settle_stuck() == 1
    request.refresh_from_db()
    assert request.status == "executing" and "looking it up failed" in request.error
    viewer = member_factory(space.workspace, "viewer", "vic@example.com")
    for who, words in ((bob, "someone else"), (viewer, "role that approves")):
        with pytest.raises(RuleError, match=words):
            approval_resolve(request=request, actor=who, executed=False, reason="checked")
    with pytest.raises(RuleError, match="reason is required"):
        approval_resolve(request=request, actor=vera, executed=False, reason="  ")
    resolved = approval_resolve(
        request=request, actor=vera, executed=False, reason="No review on the PR."
    )
    assert resolved.status == "failed"
    event = AuditEvent.objects.get(action="approval.resolved")
    assert event.actor_label == vera.email and event.payload["reason"] == "No review on the PR."
    # Resolved as not done, the round can be requested again.
    again = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert again.outcome == "pending", again.reason


@pytest.mark.django_db
def test_a_stuck_request_for_an_older_round_never_blocks_the_newest(stuck):
    space, review_round, bob, _, request = stuck
    refused = pytest.raises(Exception, match="already waiting")
    with refused:
        publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    _new_round(space, review_round)
    asked = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert asked.outcome == "pending", asked.reason
    assert ApprovalRequest.objects.get(pk=request.pk).status == "executing"


@pytest.mark.django_db
def test_the_api_resolves_for_approvers_only(stuck, client_for, settings, member_factory):
    space, _, bob, vera, request = stuck
    settings.QUORUM_APPROVAL_LEASE_SECONDS = 3
    Execution.objects.filter(request=request).update(
        started_at=timezone.now() - timedelta(seconds=5)
    )
    url = f"/api/v1/workspaces/{space.workspace.slug}/approvals/{request.pk}/resolve"
    body = {"outcome": "executed", "reason": "The review is on the pull request."}
    viewer = member_factory(space.workspace, "viewer", "vic@example.com")
    assert client_for(viewer).post(url, body, "application/json").status_code == 403
    assert (
        client_for(vera)
        .post(url, {"outcome": "maybe", "reason": "x"}, "application/json")
        .status_code
        == 422
    )
    answer = client_for(vera).post(url, body, "application/json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "executed"
    record = PublishRecord.objects.filter(approval_request=request).first()
    assert record is None or record.state == "posted"
    assert client_for(vera).post(url, body, "application/json").status_code == 400
