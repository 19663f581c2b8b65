"""The checkpoint: the one path from a person's wish to a mutation.

`checkpoint` is what every mutating action calls. It reads the workspace's policy for the
action class, then runs the action (allow), refuses it (deny, or nobody to approve), or creates
the approval request that guardrails/services/approvals.py carries on from.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from guardrails import rules
from guardrails.actions import ActionClass, action_class
from guardrails.audit import APP, Actor, Target, audit_record
from guardrails.events import approval_status_moved
from guardrails.models import ActionPolicy, ApprovalRequest
from guardrails.notify import approval_notices_queue, approvers_reachable, origin_of
from guardrails.presence import present_approvers
from guardrails.services.approvals import approval_audit
from workspaces.models import Workspace
from workspaces.rules import RuleError

log = logging.getLogger(__name__)

NO_APPROVER = (
    "No approver is connected; publishing is blocked. "
    "Ask an approver to open the approvals inbox, then try again."
)


@dataclass(frozen=True)
class CheckpointResult:
    outcome: rules.CheckpointOutcome
    reason: str = ""
    request: ApprovalRequest | None = None
    result: dict[str, Any] | None = None


def payload_hash(action: str, payload: dict[str, Any]) -> str:
    canonical = json.dumps(
        {"action": action, "payload": payload}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def policy_for(workspace: Workspace, action: str) -> ActionPolicy:
    spec = action_class(action)
    if spec.fixed_policy is not None:
        return ActionPolicy(workspace=workspace, action_class=action, policy=spec.fixed_policy)
    policy = ActionPolicy.objects.filter(workspace=workspace, action_class=action).first()
    if policy is not None:
        return policy
    if spec.default_policy is not None:
        return ActionPolicy(workspace=workspace, action_class=action, policy=spec.default_policy)
    default = rules.Policy.REQUIRE_APPROVAL if spec.mutating else rules.Policy.ALLOW
    return ActionPolicy(workspace=workspace, action_class=action, policy=default.value)


def checkpoint(
    *,
    action: str,
    actor: Any,
    workspace: Workspace,
    target: Target,
    payload: dict[str, Any],
    http_request: Any = None,
    note: str = "",
) -> CheckpointResult:
    """Decide what happens to a mutating action: run it, ask for approval, or refuse. `note`
    is what the requester tells the approver; it is kept with the request's audit event, not
    in the payload the approval binds."""
    spec = action_class(action)
    try:
        clean = spec.payload.model_validate(payload).model_dump()
    except ValidationError as exc:
        raise RuleError(f"Invalid {action} payload: {exc.errors()[0]['msg']}") from exc
    if spec.scope(clean) != (workspace.pk, target.type, target.id):
        raise RuleError(f"The {action} payload does not act on {target.label} in this workspace.")
    policy = policy_for(workspace, action)
    effective = rules.policy_for_requester(
        rules.Policy(policy.policy), by_agent=bool(getattr(actor, "quorum_agent", ""))
    )
    base = {"action_class": action, "payload": clean, "policy": effective.value}
    if effective == rules.Policy.DENY:
        reason = f"The workspace policy denies {spec.description.lower()}."
        return _refused(reason, base, actor, workspace, target, http_request)
    digest = payload_hash(action, clean)
    if effective == rules.Policy.ALLOW:
        return _run_allowed(spec, clean, digest, actor, workspace, target, http_request)
    # require_approval: fail closed when nobody but the requester could approve right now, nor
    # be told of the request (an approver told by mail or webhook opens it from the link).
    if (
        spec.needs_presence
        and not present_approvers(workspace_id=workspace.pk, exclude_user_id=actor.pk)
        and not approvers_reachable(
            workspace_id=workspace.pk, action=action, exclude_user_id=actor.pk
        )
    ):
        return _refused(NO_APPROVER, base, actor, workspace, target, http_request)
    return _request_create(
        action, clean, digest, policy, actor, workspace, target, http_request, note
    )


def _refused(
    reason: str,
    base: dict[str, Any],
    actor: Any,
    workspace: Workspace,
    target: Target,
    http_request: Any,
) -> CheckpointResult:
    audit_record(
        action="checkpoint.refused",
        actor=Actor.of(actor),
        workspace=workspace,
        target=target,
        payload={**base, "reason": reason},
        request=http_request,
    )
    return CheckpointResult(rules.CheckpointOutcome.REFUSED, reason)


def _request_create(
    action: str,
    clean: dict[str, Any],
    digest: str,
    policy: ActionPolicy,
    actor: Any,
    workspace: Workspace,
    target: Target,
    http_request: Any,
    note: str,
) -> CheckpointResult:
    """The approval request, unless an identical one is already open; approvers are told."""
    with transaction.atomic():
        existing = ApprovalRequest.objects.filter(
            workspace=workspace,
            payload_hash=digest,
            status__in=[rules.Status.PENDING, rules.Status.APPROVED],
        ).first()
        if existing is not None:
            return CheckpointResult(
                rules.CheckpointOutcome.PENDING,
                "An identical request is already waiting.",
                existing,
            )
        request = ApprovalRequest.objects.create(
            workspace=workspace,
            action_class=action,
            requester=actor,
            requester_agent=getattr(actor, "quorum_agent", "")[:100],
            target_type=target.type,
            target_id=target.id,
            target_label=target.label[:300],
            payload=clean,
            payload_hash=digest,
            head_sha=clean.get("head_sha", ""),
            approvals_required=max(policy.approvals_required, 1),
            expires_at=timezone.now() + timedelta(minutes=policy.expires_after_minutes),
        )
        extra = {"note": note.strip()[:2000]} if note.strip() else {}
        who = Actor.of(actor)
        approval_audit(request, "approval.requested", who, http_request, payload=clean, **extra)
        transaction.on_commit(lambda: approval_status_moved(request, "requested"))
        # Approvers are told by email and the workspace's webhook, from a background task.
        origin = origin_of(http_request)
        transaction.on_commit(lambda: approval_notices_queue(request.pk, origin))
    return CheckpointResult(rules.CheckpointOutcome.PENDING, "Waiting for an approver.", request)


def _run_allowed(
    spec: ActionClass,
    clean: dict[str, Any],
    digest: str,
    actor: Any,
    workspace: Workspace,
    target: Target,
    http_request: Any,
) -> CheckpointResult:
    """`allow` skips the second person, not the record: requested and executed events carry the
    payload hash, and a stale head refuses exactly as it would for an approved request."""
    who = Actor.of(actor)
    base = {"action_class": spec.name, "payload_hash": digest, "policy": rules.Policy.ALLOW.value}
    audit_record(
        action="checkpoint.allowed",
        actor=who,
        workspace=workspace,
        target=target,
        payload={**base, "payload": clean, "head_sha": clean.get("head_sha", "")},
        request=http_request,
    )
    reason = stale_reason(spec, clean, clean.get("head_sha", ""))
    if reason is None:
        try:
            result = spec.execute(clean, actor, None)
        except Exception as exc:
            log.warning("allowed %s refused or failed: %s", spec.name, exc)
            reason = str(exc)[:500]
    if reason is not None:
        audit_record(
            action=f"{spec.name}.failed",
            actor=who,
            workspace=workspace,
            target=target,
            payload={**base, "reason": reason},
            request=http_request,
        )
        return CheckpointResult(rules.CheckpointOutcome.REFUSED, reason)
    # Like an approved request, it is the app that acted, for the person named in the payload.
    audit_record(
        action=f"{spec.name}.executed",
        actor=APP,
        workspace=workspace,
        target=target,
        payload={**base, "result": result, "requester": who.label, "approvers": []},
        request=http_request,
    )
    return CheckpointResult(rules.CheckpointOutcome.ALLOWED, result=result)


def stale_reason(spec: ActionClass, payload: dict[str, Any], bound_head: str) -> str | None:
    """Why the payload's subject is no longer what was asked about, or None."""
    try:
        current = spec.current_head(payload)
    except Exception as exc:
        return f"Could not confirm the current state before executing: {exc}"[:500]
    if current != bound_head:
        return (
            "The subject changed since the request was made "
            f"(now {current[:10] or 'unknown'}, asked about {bound_head[:10]}): the approval is "
            "stale. Request it again."
        )
    return None
