"""Approvals bind content: what was approved is exactly what is posted, or nothing is."""

from __future__ import annotations

import pytest

from guardrails.audit import Target
from guardrails.models import ActionPolicy, ApprovalRequest, AuditEvent
from guardrails.presence import presence_touch
from guardrails.services.approvals import approval_decide, approval_withdraw
from guardrails.services.checkpoint import checkpoint, payload_hash
from guardrails.services.execution import approval_execute
from guardrails.services.policies import policy_update
from reviews.models import ReviewNode
from reviews.services.nodes import node_dismiss
from reviews.services.publish_plans import publish_plan_current
from reviews.services.publishing import publish_request
from tests.publishing_fixtures import BASE
from workspaces.rules import RuleError


def _requested(publishable):
    space, review_round, bob, vera = publishable
    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert result.outcome == "pending"
    return result.request


def _approved(publishable):
    request = _requested(publishable)
    approval_decide(request=request, approver=publishable[3], decision="approve")
    return request


def _refused(request, fake_github, reason: str) -> None:
    approval_execute(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "failed"
    assert reason in request.error
    assert fake_github.reviews("acme", "app", 5) == []
    event = AuditEvent.objects.get(action="approval.refused_at_execution")
    assert reason in event.payload["reason"]


def test_the_payload_carries_the_plan_its_digest_and_githubs_head(publishable):
    request = _approved(publishable)
    payload = request.payload
    assert payload["github_head"] == payload["head_sha"] == publishable[1].head_sha
    assert payload["plan"]["event"] == "COMMENT"
    assert [c["path"] for c in payload["plan"]["comments"]] == ["calc.py"]
    assert len(payload["plan_digest"]) == 64


def test_a_head_moved_on_github_without_a_webhook_refuses(
    publishable, git_repo_factory, fake_github
):
    request = _approved(publishable)
    # A push GitHub knows about and Quorum does not: no webhook, no new round.
    repo_path = fake_github.repos[("acme", "app")].path
    from tests.fakes.gitrepo import GitRepo

    GitRepo(repo_path).commit(
        "more", {"calc.py": BASE.replace("v4 = 4", "v4 = 44")}, branch="feature"
    )
    _refused(request, fake_github, "changed since the request")


def test_triage_after_the_approval_refuses(publishable, fake_github, alice):
    request = _approved(publishable)
    node = ReviewNode.objects.get(round=publishable[1])
    node_dismiss(node=node, user=alice, reason="not a problem")
    approval_execute(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "failed" and "changed since it was approved" in request.error
    assert fake_github.reviews("acme", "app", 5) == []


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p["plan"].update(body="Everything is fine. Ship it."),
        lambda p: p.update(event="APPROVE"),
        lambda p: p["plan"]["comments"].clear(),
    ],
    ids=["body", "event", "comments"],
)
def test_a_payload_edited_in_the_database_refuses(publishable, fake_github, edit):
    request = _approved(publishable)
    payload = request.payload
    edit(payload)
    ApprovalRequest.objects.filter(pk=request.pk).update(payload=payload)
    _refused(request, fake_github, "altered")


def test_a_payload_pointed_at_another_workspace_refuses_even_with_a_matching_hash(
    publishable, fake_github, review_factory
):
    request = _approved(publishable)
    elsewhere = review_factory()  # another tenant's review space
    payload = {**request.payload, "space": elsewhere.space_id}
    ApprovalRequest.objects.filter(pk=request.pk).update(
        payload=payload, payload_hash=payload_hash("prPublish", payload)
    )
    _refused(request, fake_github, "other than the request's target")


def test_an_executing_request_is_left_alone_by_a_concurrent_execute(publishable, fake_github):
    request = _approved(publishable)
    ApprovalRequest.objects.filter(pk=request.pk).update(status="executing")
    approval_execute(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "executing" and request.error == ""


def test_the_requester_withdraws_whatever_their_role(publishable, member_factory):
    space, review_round, bob, vera = publishable
    request = _requested(publishable)
    with pytest.raises(RuleError, match="Only the person who asked"):
        approval_withdraw(request=request, actor=vera)
    approval_withdraw(request=request, actor=bob)  # bob is a reviewer, not an approver
    request.refresh_from_db()
    assert request.status == "cancelled"
    assert AuditEvent.objects.filter(action="approval.withdrawn", actor_label=bob.email).exists()


def test_withdraw_through_the_inbox_page(publishable, client_for):
    space, review_round, bob, vera = publishable
    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    client = client_for(bob)
    page = client.get(f"/w/{space.workspace.slug}/reviews/{space.pk}/publish/").content.decode()
    assert "calc.py:3" in page
    client.post(f"/w/{space.workspace.slug}/reviews/{space.pk}/publish/")
    request = ApprovalRequest.objects.get()
    inbox = client.get(f"/w/{space.workspace.slug}/approvals/").content.decode()
    assert f"/approvals/{request.pk}/withdraw/" in inbox
    client.post(f"/w/{space.workspace.slug}/approvals/{request.pk}/withdraw/")
    request.refresh_from_db()
    assert request.status == "cancelled"


def test_allow_needs_a_second_admin(publishable, alice, member_factory, fake_github):
    space, review_round, bob, vera = publishable
    ws = space.workspace
    outcome = policy_update(
        workspace=ws,
        action="prPublish",
        policy="allow",
        approvals_required=1,
        expires_after_minutes=60,
        actor=alice,
    )
    assert not outcome.applied
    assert not ActionPolicy.objects.filter(workspace=ws, policy="allow").exists()
    request = outcome.request
    with pytest.raises(RuleError, match="someone else"):
        approval_decide(request=request, approver=alice, decision="approve")
    with pytest.raises(RuleError, match="admin or owner"):
        approval_decide(request=request, approver=vera, decision="approve")  # an approver
    admin = member_factory(ws, "admin")
    approval_decide(request=request, approver=admin, decision="approve")
    approval_execute(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "executed"
    assert ActionPolicy.objects.get(workspace=ws).policy == "allow"
    # The allow path still records the request with its hash and checks GitHub's head.
    result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert result.outcome == "allowed"
    allowed = AuditEvent.objects.get(action="checkpoint.allowed")
    executed = AuditEvent.objects.get(action="prPublish.executed")
    assert allowed.payload["payload_hash"] == executed.payload["payload_hash"]
    assert allowed.payload["payload_hash"] == payload_hash("prPublish", allowed.payload["payload"])


def test_a_policy_changed_meanwhile_makes_a_loosening_request_stale(
    publishable, alice, member_factory
):
    ws = publishable[0].workspace
    outcome = policy_update(
        workspace=ws,
        action="prPublish",
        policy="allow",
        approvals_required=1,
        expires_after_minutes=60,
        actor=alice,
    )
    policy_update(  # tightened in the meantime: the request no longer describes a change from now
        workspace=ws,
        action="prPublish",
        policy="deny",
        approvals_required=1,
        expires_after_minutes=60,
        actor=alice,
    )
    approval_decide(
        request=outcome.request, approver=member_factory(ws, "admin"), decision="approve"
    )
    approval_execute(request_id=outcome.request.pk)
    outcome.request.refresh_from_db()
    assert outcome.request.status == "failed"
    assert ActionPolicy.objects.get(workspace=ws).policy == "deny"


def test_the_guardrail_settings_page_turns_loosening_into_a_request(publishable, alice, client_for):
    ws = publishable[0].workspace
    client = client_for(alice)
    response = client.post(
        f"/w/{ws.slug}/settings/guardrails/",
        {
            "action_class": "prPublish",
            "policy": "allow",
            "approvals_required": 1,
            "expires_after_minutes": 60,
        },
        follow=True,
    )
    assert "needs a second admin or owner" in response.content.decode()
    assert ApprovalRequest.objects.get().action_class == "policyChange"


def test_an_approved_request_whose_message_was_lost_is_run_by_the_sweeper(publishable, fake_github):
    from datetime import timedelta

    from django.utils import timezone

    from guardrails.services.execution import approvals_resume

    request = _approved(publishable)  # approved; its execution message never arrived
    assert approvals_resume() == 0  # too recent: the message may still be on its way
    ApprovalRequest.objects.filter(pk=request.pk).update(
        decided_at=timezone.now() - timedelta(minutes=1)
    )
    assert approvals_resume() == 1
    request.refresh_from_db()
    assert request.status == "executed"
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    assert approvals_resume() == 0


def test_a_request_naming_another_workspaces_space_is_refused_at_the_checkpoint(
    publishable, review_factory
):
    space, review_round, bob, vera = publishable
    elsewhere = review_factory()
    current = publish_plan_current(space=space, selection="all_open", approve_on_ship=True)
    payload = {
        **current.payload(space=space, selection="all_open", approve_on_ship=True),
        "space": elsewhere.space_id,
    }
    with pytest.raises(RuleError, match="does not act on"):
        checkpoint(
            action="prPublish",
            actor=bob,
            workspace=space.workspace,
            target=Target("reviewspace", str(space.pk), str(space.pull_request)),
            payload=payload,
        )
    assert not ApprovalRequest.objects.exists()
