"""Guardrails API: publish requests through the checkpoint, decisions, and the audit trail."""

from __future__ import annotations

from typing import Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError

from config.api_types import ErrorOut, Filter, Id, Input, Limit, Offset, Slug, Text, responses
from guardrails.models import ApprovalRequest, AuditEvent
from guardrails.services import approval_decide, approval_withdraw
from reviews.selectors import space_get_for_user
from reviews.services import publishing
from workspaces.middleware import archived_approval_target, archived_message
from workspaces.permissions import membership_get, require
from workspaces.rules import Perm, RuleError

router = Router(tags=["guardrails"])


class PublishIn(Input):
    # The API publishes only peer-confirmed findings and never approves unless asked.
    selection: Literal["all_open", "consensus"] = "consensus"
    approve_on_ship: bool = False


class DecisionIn(Input):
    reason: Text = Field(default="", max_length=2000)


class ApprovalOut(Schema):
    id: int
    action_class: str
    status: str
    requester: str
    target: str
    payload: dict
    payload_hash: str
    head_sha: str
    created_at: str
    expires_at: str
    result: dict
    error: str


class AuditOut(Schema):
    seq: int
    created_at: str
    actor: str
    action: str
    target_type: str
    target_id: str
    target_label: str
    payload: dict
    hash: str


def _approval(r: ApprovalRequest) -> dict:
    return {
        "id": r.pk,
        "action_class": r.action_class,
        "status": r.status,
        "requester": r.requester.email,
        "target": r.target_label,
        "payload": r.payload,
        "payload_hash": r.payload_hash,
        "head_sha": r.head_sha,
        "created_at": r.created_at.isoformat(),
        "expires_at": r.expires_at.isoformat(),
        "result": r.result,
        "error": r.error,
    }


@router.post(
    "/{slug}/reviews/{space_id}/publish-requests",
    response=responses({200: dict, 202: dict, 409: ErrorOut}, 400, 403, 404, 413, 422, 503),
)
def publish_request(request, slug: Slug, space_id: Id, body: PublishIn):
    membership = membership_get(user=request.user, slug=slug)
    require(membership, Perm.REQUEST_PUBLISH, attempted="request publishing", request=request)
    space = space_get_for_user(space_id=space_id, workspace_slug=slug)
    if space.pull_request.repository.archived_at is not None:
        raise HttpError(409, archived_message(space.pull_request.repository))
    try:
        result = publishing.publish_request(
            space=space,
            selection=body.selection,
            approve_on_ship=body.approve_on_ship,
            actor=request.user,
            http_request=request,
        )
    except publishing.AlreadyPublished as exc:
        # Each round is posted once, whatever the selection: this one is on GitHub already.
        return Status(409, {"detail": str(exc)})
    except publishing.PublishError as exc:
        raise RuleError(str(exc)) from exc
    if result.outcome == "refused":
        return Status(409, {"detail": result.reason})
    if result.outcome == "pending":
        return Status(202, {"detail": result.reason, "request": _approval(result.request)})
    return Status(200, {"detail": "executed", "result": result.result})


@router.get("/{slug}/approvals", response=responses({200: list[ApprovalOut]}, 404, 422))
def approval_list(request, slug: Slug, status: Filter = ""):
    membership = membership_get(user=request.user, slug=slug)
    rows = ApprovalRequest.objects.filter(workspace=membership.workspace).select_related(
        "requester"
    )
    if status:
        rows = rows.filter(status=status)
    return [_approval(r) for r in rows[:200]]


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
    return _approval(approval_withdraw(request=approval, actor=request.user, http_request=request))


@router.post(
    "/{slug}/approvals/{request_id}/{decision}",
    response=responses({200: ApprovalOut}, 400, 403, 404, 409, 413, 422, 503),
)
def approval_decision(
    request, slug: Slug, request_id: Id, decision: Literal["approve", "deny"], body: DecisionIn
):
    membership = membership_get(user=request.user, slug=slug)
    require(
        membership, Perm.DECIDE_APPROVAL, attempted="decide on approval requests", request=request
    )
    approval = get_object_or_404(ApprovalRequest, pk=request_id, workspace=membership.workspace)
    archived = archived_approval_target(approval) if decision == "approve" else None
    if archived is not None:
        raise HttpError(409, archived_message(archived))
    decided = approval_decide(
        request=approval,
        approver=request.user,
        decision=decision,
        reason=body.reason,
        http_request=request,
    )
    return _approval(decided)


@router.get("/{slug}/audit", response=responses({200: list[AuditOut]}, 403, 404, 422))
def audit_list(
    request,
    slug: Slug,
    action: Filter = "",
    actor: Filter = "",
    target: Filter = "",
    limit: Limit = 100,
    offset: Offset = 0,
):
    membership = membership_get(user=request.user, slug=slug)
    require(membership, Perm.VIEW_AUDIT, attempted="read the audit trail", request=request)
    events = AuditEvent.objects.filter(workspace=membership.workspace).order_by("-seq")
    if action:
        events = events.filter(action__startswith=action)
    if actor:
        events = events.filter(actor_label__icontains=actor)
    if target:
        events = events.filter(target_id=target)
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
