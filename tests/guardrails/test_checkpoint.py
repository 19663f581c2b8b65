"""The publish checkpoint: policies, fail-closed presence, four eyes, exactly-once execution."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client
from django.utils import timezone

from config.asgi import application
from guardrails.models import ActionPolicy, ApprovalRequest, AuditEvent, Execution
from guardrails.presence import presence_touch
from guardrails.services.approvals import approval_decide
from guardrails.services.checkpoint import NO_APPROVER
from guardrails.services.execution import approval_execute
from guardrails.services.policies import policy_update
from reviews.services.publishing import publish_request
from reviews.services.rounds import round_start
from workspaces.rules import RuleError

BASE = "".join(f"v{i} = {i}\n" for i in range(1, 31))


def _ask(space, review_round, actor):
    return publish_request(space=space, selection="all_open", approve_on_ship=True, actor=actor)


def test_with_no_approver_connected_the_request_is_refused_and_audited(publishable):
    space, review_round, bob, _ = publishable
    result = _ask(space, review_round, bob)
    assert result.outcome == "refused" and result.reason == NO_APPROVER
    assert not ApprovalRequest.objects.exists()
    event = AuditEvent.objects.get(action="checkpoint.refused")
    assert event.actor_label == "bob@example.com" and event.payload["reason"] == NO_APPROVER


def test_the_requester_alone_in_the_inbox_does_not_count(publishable):
    space, review_round, _, vera = publishable
    presence_touch(channel_name="vera-socket", workspace_id=space.workspace_id, user_id=vera.pk)
    result = _ask(space, review_round, vera)
    assert result.outcome == "refused"


@pytest.mark.django_db(transaction=True)
def test_an_approver_connected_over_a_real_socket_sees_the_request_live(publishable):
    space, review_round, bob, vera = publishable
    client = Client()
    client.force_login(vera)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    slug = space.workspace.slug

    async def scenario():
        from channels.db import database_sync_to_async

        comm = WebsocketCommunicator(
            application,
            f"/ws/approvals/{slug}/",
            headers=[(b"origin", b"http://127.0.0.1"), cookie],
        )
        connected, _ = await comm.connect()
        assert connected
        first = await comm.receive_from(timeout=5)
        assert "Nothing is waiting." in first
        result = await database_sync_to_async(_ask)(space, review_round, bob)
        update = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return result, update

    result, update = asyncio.run(scenario())
    assert result.outcome == "pending"
    assert f"#{result.request.pk}" in update and "bob@example.com" in update
    assert "GitHub event: <strong>COMMENT</strong>" in update  # shown before deciding
    # The socket is gone: its presence no longer counts.
    from guardrails.presence import present_approvers

    assert present_approvers(workspace_id=space.workspace_id) == []


def _pending(publishable):
    space, review_round, bob, vera = publishable
    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    result = _ask(space, review_round, bob)
    assert result.outcome == "pending"
    return result.request


def test_four_eyes_and_roles_are_checked_when_deciding(publishable, member_factory, workspace):
    space, _, bob, vera = publishable
    request = _pending(publishable)
    with pytest.raises(RuleError, match="someone else"):
        approval_decide(request=request, approver=bob, decision="approve")
    viewer = member_factory(workspace, "viewer")
    with pytest.raises(RuleError, match="approver role"):
        approval_decide(request=request, approver=viewer, decision="approve")
    assert AuditEvent.objects.filter(action="approval.refused").count() == 2
    request.refresh_from_db()
    assert request.status == "pending"


def test_approval_executes_once_and_posts_one_review(
    publishable, fake_github, django_capture_on_commit_callbacks
):
    space, _, bob, vera = publishable
    request = _pending(publishable)
    approval_decide(request=request, approver=vera, decision="approve", reason="looks right")
    for _ in range(3):  # double click, redelivered task
        approval_execute(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "executed" and request.result["url"]
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    assert Execution.objects.filter(request=request).count() == 1
    executed = AuditEvent.objects.get(action="prPublish.executed")
    assert executed.payload["requester"] == "bob@example.com" and executed.payload["approvers"] == [
        "vera@example.com"
    ]
    actions = list(
        AuditEvent.objects.filter(action__startswith=("approval."))
        .order_by("seq")
        .values_list("action", flat=True)
    )
    assert actions == ["approval.requested", "approval.approved"]


def test_a_new_round_makes_an_approved_request_stale(publishable, fake_github):
    space, review_round, bob, vera = publishable
    request = _pending(publishable)
    approval_decide(request=request, approver=vera, decision="approve")
    round_start(space=space, head_sha="f" * 40, tier="light")
    approval_execute(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "failed" and "round 2 is now current" in request.error
    assert fake_github.reviews("acme", "app", 5) == []
    assert AuditEvent.objects.filter(action="approval.failed").exists()


def test_an_expired_request_never_executes(publishable, fake_github):
    space, review_round, bob, vera = publishable
    request = _pending(publishable)
    ApprovalRequest.objects.filter(pk=request.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    with pytest.raises(RuleError, match="expired"):
        approval_decide(request=request, approver=vera, decision="approve")
    request.refresh_from_db()
    assert request.status == "expired"
    assert fake_github.reviews("acme", "app", 5) == []


def test_policies_allow_or_deny_and_are_audited(publishable, alice, fake_github, member_factory):
    space, review_round, bob, _ = publishable
    outcome = policy_update(
        workspace=space.workspace,
        action="prPublish",
        policy="deny",
        approvals_required=1,
        expires_after_minutes=60,
        actor=alice,
    )
    assert outcome.applied  # tightening needs nobody else
    assert _ask(space, review_round, bob).outcome == "refused"
    outcome = policy_update(
        workspace=space.workspace,
        action="prPublish",
        policy="allow",
        approvals_required=1,
        expires_after_minutes=60,
        actor=alice,
    )
    assert not outcome.applied and outcome.request.action_class == "policyChange"
    assert ActionPolicy.objects.get().policy == "deny"
    admin = member_factory(space.workspace, "admin", "adam@example.com")
    approval_decide(request=outcome.request, approver=admin, decision="approve")
    approval_execute(request_id=outcome.request.pk)
    assert ActionPolicy.objects.get().policy == "allow"
    assert _ask(space, review_round, bob).outcome == "allowed"
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    changes = AuditEvent.objects.filter(action="guardrails.policy_changed").order_by("seq")
    assert [c.payload["after"]["policy"] for c in changes] == ["deny", "allow"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_approve_and_execute_attempts_post_once(
    publishable, fake_github, member_factory, workspace
):
    space, _, bob, vera = publishable
    approvers = [vera] + [
        member_factory(workspace, "approver", f"a{i}@example.com") for i in range(4)
    ]
    request = _pending(publishable)
    barrier = threading.Barrier(50)
    errors: list[BaseException] = []

    def attempt(i: int) -> None:
        try:
            barrier.wait()
            if i % 2:
                try:
                    approval_decide(
                        request=request, approver=approvers[i % len(approvers)], decision="approve"
                    )
                except RuleError:
                    pass  # already decided / already approved: expected for all but one
            approval_execute(request_id=request.pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    approval_execute(request_id=request.pk)  # whatever the interleaving, once approved it runs
    request.refresh_from_db()
    assert request.status == "executed"
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    assert AuditEvent.objects.filter(action="prPublish.executed").count() == 1


def test_opening_the_inbox_marks_overdue_requests_expired(publishable, client_for):
    space, _, _, vera = publishable
    request = _pending(publishable)
    ApprovalRequest.objects.filter(pk=request.pk).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    html = client_for(vera).get(f"/w/{space.workspace.slug}/approvals/").content.decode()
    assert "Nothing is waiting." in html
    request.refresh_from_db()
    assert request.status == "expired"
    assert AuditEvent.objects.filter(action="approval.expired").exists()
