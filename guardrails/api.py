"""Guardrails API: approval requests, their decisions, and the audit trail.

Asking for an action goes through the app it belongs to (a review's publish requests are in
reviews/api/publishing.py), which calls the checkpoint."""

from __future__ import annotations

from typing import Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema

from config.api_types import (
    Day,
    Filter,
    Id,
    Input,
    JsonMap,
    Limit,
    Offset,
    Slug,
    Text,
    responses,
)
from guardrails import rules
from guardrails.models import ApprovalRequest
from guardrails.selectors import audit_events
from guardrails.services.approvals import approval_decide, approval_resolve, approval_withdraw
from workspaces.permissions import membership_get, require
from workspaces.rules import Perm

router = Router(tags=["guardrails"])


class DecisionIn(Input):
    reason: Text = Field(default="", max_length=2000)


class ResolveIn(Input):
    """What an approver found on GitHub about an execution nobody could confirm."""

    outcome: Literal["executed", "failed"]
    reason: Text = Field(min_length=1, max_length=rules.RESOLUTION_REASON_MAX)


class NoticeOut(Schema):
    channel: Literal["email", "webhook"]
    # The approver's address, or the webhook's host.
    recipient: str
    sent_at: str


class ApprovalOut(Schema):
    id: int
    action_class: str
    status: rules.Status
    requester: str
    target: str
    # The action's payload as approved (its shape depends on the action class).
    payload: JsonMap
    payload_hash: str
    head_sha: str
    created_at: str
    expires_at: str
    # What the action returned once executed; empty before.
    result: JsonMap
    error: str
    # Who was told that the request waits, how and when (README "Approval notices").
    notified: list[NoticeOut]


class AuditOut(Schema):
    seq: int
    created_at: str
    actor: str
    action: str
    target_type: str
    target_id: str
    target_label: str
    # What the event records; its shape depends on the action.
    payload: JsonMap
    hash: str


def approval_out(r: ApprovalRequest) -> dict:
    """An approval request as the API shows it (ApprovalOut)."""
    return {
        "id": r.pk,
        "action_class": r.action_class,
        "status": r.status,
        "requester": r.requester_label,
        "target": r.target_label,
        "payload": r.payload,
        "payload_hash": r.payload_hash,
        "head_sha": r.head_sha,
        "created_at": r.created_at.isoformat(),
        "expires_at": r.expires_at.isoformat(),
        "result": r.result,
        "error": r.error,
        "notified": [
            {"channel": n.channel, "recipient": n.recipient, "sent_at": n.sent_at.isoformat()}
            for n in r.notices.all()
        ],
    }


@router.get("/{slug}/approvals", response=responses({200: list[ApprovalOut]}, 404, 422))
def approval_list(request, slug: Slug, status: Filter = ""):
    membership = membership_get(user=request.user, slug=slug)
    rows = (
        ApprovalRequest.objects.filter(workspace=membership.workspace)
        .select_related("requester")
        .prefetch_related("notices")
    )
    if status:
        rows = rows.filter(status=status)
    return [approval_out(r) for r in rows[:200]]


# Registered before the {decision} route: URL patterns match in order, and "withdraw" would
# be taken there for a decision (a 422).
@router.post(
    "/{slug}/approvals/{request_id}/withdraw",
    response=responses({200: ApprovalOut}, 400, 403, 404, 422),
)
def approval_withdraw_route(request, slug: Slug, request_id: Id):
    """The requester takes back their own request; no approver role is needed for that."""
    membership = membership_get(user=request.user, slug=slug)
    approval = get_object_or_404(ApprovalRequest, pk=request_id, workspace=membership.workspace)
    withdrawn = approval_withdraw(request=approval, actor=request.user, http_request=request)
    return approval_out(withdrawn)


@router.post(
    "/{slug}/approvals/{request_id}/resolve",
    response=responses({200: ApprovalOut}, 400, 403, 404, 413, 422),
)
def approval_resolve_route(request, slug: Slug, request_id: Id, body: ResolveIn):
    """An approver settles an execution past its lease that GitHub could not confirm."""
    membership = membership_get(user=request.user, slug=slug)
    require(
        membership, Perm.DECIDE_APPROVAL, attempted="resolve approval requests", request=request
    )
    approval = get_object_or_404(ApprovalRequest, pk=request_id, workspace=membership.workspace)
    resolved = approval_resolve(
        request=approval,
        actor=request.user,
        executed=body.outcome == rules.Status.EXECUTED,
        reason=body.reason,
        http_request=request,
    )
    return approval_out(resolved)


@router.post(
    "/{slug}/approvals/{request_id}/{decision}",
    response=responses({200: ApprovalOut}, 400, 403, 404, 409, 413, 422, 503),
)
def approval_decision(
    request, slug: Slug, request_id: Id, decision: rules.Decision, body: DecisionIn
):
    membership = membership_get(user=request.user, slug=slug)
    require(
        membership, Perm.DECIDE_APPROVAL, attempted="decide on approval requests", request=request
    )
    approval = get_object_or_404(ApprovalRequest, pk=request_id, workspace=membership.workspace)
    decided = approval_decide(
        request=approval,
        approver=request.user,
        decision=decision,
        reason=body.reason,
        http_request=request,
    )
    return approval_out(decided)


@router.get("/{slug}/audit", response=responses({200: list[AuditOut]}, 403, 404, 422))
def audit_list(
    request,
    slug: Slug,
    action: Filter = "",
    actor: Filter = "",
    target: Filter = "",
    since: Day | None = None,
    until: Day | None = None,
    limit: Limit = 100,
    offset: Offset = 0,
):
    """Newest first. `action`: starts with; `actor`: the actor's label contains (any case);
    `target`: the target's id is exactly it or its label contains it; `since`/`until`: days,
    both included. The audit page filters the same way (guardrails.selectors.audit_events)."""
    membership = membership_get(user=request.user, slug=slug)
    require(membership, Perm.VIEW_AUDIT, attempted="read the audit trail", request=request)
    events = audit_events(
        workspace=membership.workspace,
        action=action,
        actor=actor,
        target=target,
        since=since,
        until=until,
    )
    return [
        {
            "seq": e.seq,
            "created_at": e.created_at.isoformat(),
            "actor": e.actor_label,
            "action": e.action,
            "target_type": e.target_type,
            "target_id": e.target_id,
            "target_label": e.target_label,
            "payload": e.payload,
            "hash": e.hash,
        }
        for e in events[offset : offset + limit]
    ]
