"""An approval request's life once it exists: decided, withdrawn, resolved, cancelled, expired.

Approval status changes only here, in `approval_transition`, each move checked by the pure
rules (guardrails/rules.py) and audited; the checkpoint (which creates requests) and the
execution (which runs approved ones) move it through the same function.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.background import QueueUnavailable, submit_now
from guardrails import rules
from guardrails.actions import action_class
from guardrails.audit import SYSTEM, Actor, Target, audit_record
from guardrails.events import approval_status_moved
from guardrails.models import ApprovalDecision, ApprovalRequest, Execution
from workspaces.models import Membership, Workspace
from workspaces.rules import Perm, ReadOnlyError, RuleError, archived_message
from workspaces.selectors import archived_approval_target

log = logging.getLogger(__name__)


def approval_machine(request: ApprovalRequest) -> rules.Approval:
    """The request as the pure rules see it."""
    approvers = frozenset(
        request.decisions.filter(decision="approve").values_list("approver_id", flat=True)
    )
    return rules.Approval(
        requester_id=request.requester_id,
        head_sha=request.head_sha,
        expires_at=request.expires_at,
        approvals_required=request.approvals_required,
        status=rules.Status(request.status),
        approvers=approvers,
        executions=1 if Execution.objects.filter(request=request).exists() else 0,
    )


def approval_audit(
    request: ApprovalRequest, action: str, actor: Actor, http_request: Any = None, **extra: Any
) -> None:
    """An audit event about the request, naming what it binds."""
    audit_record(
        action=action,
        actor=actor,
        workspace=request.workspace,
        target=Target(request.target_type, request.target_id, request.target_label),
        payload={
            "request": request.pk,
            "action_class": request.action_class,
            "payload_hash": request.payload_hash,
            "head_sha": request.head_sha,
            "requester": request.requester_label,
            **extra,
        },
        request=http_request,
    )


def _locked(request_id: int) -> ApprovalRequest:
    return (
        ApprovalRequest.objects.select_for_update(of=("self",))
        .select_related("workspace", "requester")
        .get(pk=request_id)
    )


def _role(workspace: Workspace, user: Any) -> str | None:
    return (
        Membership.objects.filter(workspace=workspace, user=user)
        .values_list("role", flat=True)
        .first()
    )


def approval_decide(
    *,
    request: ApprovalRequest,
    approver: Any,
    decision: str,
    reason: str = "",
    http_request: Any = None,
) -> ApprovalRequest:
    """Record an approval or a denial; the last required approval queues the execution.
    A refused decision (self-approval, wrong role, expired…) changes nothing and is audited."""
    if decision not in ("approve", "deny"):
        raise RuleError("Decide with approve or deny.")
    archived = archived_approval_target(request) if decision == "approve" else None
    if archived is not None:
        # Approving would change a read-only review (a publish of one of its rounds).
        raise ReadOnlyError(archived_message(archived))
    now = timezone.now()
    with transaction.atomic(durable=True):
        locked = _locked(request.pk)
        role = _role(locked.workspace, approver)
        machine = approval_machine(locked)
        if (
            rules.expire(machine, now=now).status is rules.Status.EXPIRED
            and machine.status is not rules.Status.EXPIRED
        ):
            approval_transition(locked, rules.Status.EXPIRED, "approval.expired", SYSTEM)
            error: str | None = "The request has expired."
        else:
            error = _decision_record(
                locked, machine, approver, role, decision, reason, now, http_request
            )
    if error is not None:
        with transaction.atomic():
            approval_audit(
                locked,
                "approval.refused",
                Actor.of(approver),
                http_request,
                decision=decision,
                reason=error,
            )
        raise RuleError(error)
    return locked


def _decision_record(
    locked: ApprovalRequest,
    machine: rules.Approval,
    approver: Any,
    role: str | None,
    decision: str,
    reason: str,
    now: Any,
    http_request: Any,
) -> str | None:
    """Inside approval_decide's transaction: the decision recorded and the request moved, or
    why it was refused (nothing changed)."""
    try:
        if decision == "approve":
            after = rules.approve(
                machine,
                approver_id=approver.pk,
                approver_role=role,
                now=now,
                required_perm=Perm(action_class(locked.action_class).decide_perm),
            )
        else:
            after = rules.deny(machine, approver_id=approver.pk, approver_role=role, now=now)
        with transaction.atomic():
            ApprovalDecision.objects.create(
                request=locked, approver=approver, decision=decision, reason=reason
            )
    except rules.ApprovalError as exc:
        return str(exc)
    except IntegrityError:
        return "You already decided on this request."
    locked.decided_at = now
    approval_transition(
        locked,
        after.status,
        _DECISION_AUDIT.get(after.status, "approval.recorded"),
        Actor.of(approver),
        http_request,
        reason=reason,
        approver=approver.email,
    )
    if after.status is rules.Status.APPROVED:
        transaction.on_commit(lambda: _queue_execution(locked.pk))
    return None


_DECISION_AUDIT = {
    rules.Status.APPROVED: "approval.approved",
    rules.Status.DENIED: "approval.denied",
    rules.Status.CANCELLED: "approval.cancelled",
}


def approval_transition(
    request: ApprovalRequest,
    status: rules.Status,
    audit_action: str | None,
    actor: Actor | None,
    http_request: Any = None,
    **extra: Any,
) -> None:
    """The only writer of ApprovalRequest.status, called with the row locked (or, sweeping,
    with the status just read). Raises ApprovalError unless the table in guardrails/rules.py
    allows the move; saves the decision and execution columns the caller set with it, then
    audits it as `audit_action` and tells the requester once the transaction commits.
    `audit_action` None: an internal step (approved → executing) nobody is told about."""
    if not rules.may_move(request.status, status):
        raise rules.ApprovalError(f"A {request.status} request cannot become {status.value}.")
    request.status = status.value
    request.save(update_fields=["status", "decided_at", "executed_at", "result", "error"])
    if audit_action is None:
        return
    assert actor is not None, "an audited move names who made it"
    approval_audit(request, audit_action, actor, http_request, **extra)
    transaction.on_commit(lambda: approval_status_moved(request, status.value))


def _queue_execution(request_id: int) -> None:
    try:
        submit_now("guardrails.approval_execute", request_id)
    except QueueUnavailable as exc:
        # The decision is committed; the sweeper runs the request once the queue is back.
        log.warning("approved request %s waits for the task queue: %s", request_id, exc)


def approval_resolve(
    *, request: ApprovalRequest, actor: Any, executed: bool, reason: str, http_request: Any = None
) -> ApprovalRequest:
    """A person settles an execution past its lease that could not be looked up: they checked
    (on GitHub) and say whether it took effect, with a reason; audited as approval.resolved."""
    now = timezone.now()
    with transaction.atomic(durable=True):
        locked = _locked(request.pk)
        spec = action_class(locked.action_class)
        role = _role(locked.workspace, actor)
        started = Execution.objects.filter(request=locked).values_list("started_at", flat=True)
        try:
            rules.resolve(
                approval_machine(locked),
                resolver_id=actor.pk,
                resolver_role=role,
                executed=executed,
                reason=reason,
                lease_is_over=bool(started)
                and rules.lease_over(
                    started[0], now=now, lease_seconds=settings.QUORUM_APPROVAL_LEASE_SECONDS
                ),
                required_perm=Perm(spec.decide_perm),
            )
        except rules.ApprovalError as exc:
            raise RuleError(str(exc)) from exc
        locked.executed_at = now
        locked.error = "" if executed else f"Resolved as not done: {reason.strip()}"[:2000]
        approval_transition(
            locked,
            rules.Status.EXECUTED if executed else rules.Status.FAILED,
            "approval.resolved",
            Actor.of(actor),
            http_request,
            outcome="executed" if executed else "failed",
            reason=reason.strip(),
        )
        if spec.settled is not None:
            spec.settled(locked.pk, executed)
    return locked


def approval_withdraw(
    *, request: ApprovalRequest, actor: Any, http_request: Any = None
) -> ApprovalRequest:
    """The requester takes back their own open request; no role is needed to do that."""
    with transaction.atomic(durable=True):
        locked = _locked(request.pk)
        try:
            rules.withdraw(approval_machine(locked), requester_id=actor.pk, now=timezone.now())
        except rules.ApprovalError as exc:
            raise RuleError(str(exc)) from exc
        locked.decided_at = timezone.now()
        approval_transition(
            locked, rules.Status.CANCELLED, "approval.withdrawn", Actor.of(actor), http_request
        )
    return locked


def approvals_cancel_for(
    *, workspace: Workspace, target_type: str, target_ids: list[str], why: str, actor: Any
) -> int:
    """Cancel the open requests acting on targets that are going away (a repository's reviews
    deleted for good): nobody can approve, or execute, an action on nothing."""
    cancelled = 0
    for request in ApprovalRequest.objects.select_for_update().filter(
        workspace=workspace,
        target_type=target_type,
        target_id__in=target_ids,
        status__in=[rules.Status.PENDING, rules.Status.APPROVED],
    ):
        request.decided_at = timezone.now()
        request.error = why[:2000]
        approval_transition(request, rules.Status.CANCELLED, "approval.cancelled", Actor.of(actor))
        cancelled += 1
    return cancelled


def approvals_expire_due() -> int:
    now = timezone.now()
    expired = 0
    for request in ApprovalRequest.objects.filter(
        status__in=[rules.Status.PENDING, rules.Status.APPROVED], expires_at__lte=now
    ).select_related("workspace", "requester"):
        with transaction.atomic():
            approval_transition(request, rules.Status.EXPIRED, "approval.expired", SYSTEM)
            expired += 1
    return expired
