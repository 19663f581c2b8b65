"""Running approved requests: once, checked against what was approved, and settled after a
worker died during the call.

`approval_execute` is what the task queue (and the sweeper, for a lost message) runs for an
approved request; the checks before it runs and the lookup after a lost worker are here, apart
from the decisions (guardrails/services/approvals.py) that lead to it.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from guardrails import rules
from guardrails.actions import ActionClass, action_class
from guardrails.audit import APP, SYSTEM
from guardrails.models import ApprovalRequest, Execution
from guardrails.services.approvals import approval_machine, approval_transition
from guardrails.services.checkpoint import payload_hash, stale_reason

log = logging.getLogger(__name__)


def approvals_resume(*, older_than_seconds: int = 30) -> int:
    """Execute approved requests whose execution was never started (a lost queue message):
    called by the pipeline sweeper. approval_execute runs each at most once whatever happens."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    waiting = list(
        ApprovalRequest.objects.filter(
            status=rules.Status.APPROVED, decided_at__lte=cutoff, expires_at__gt=timezone.now()
        ).values_list("pk", flat=True)
    )
    for request_id in waiting:
        approval_execute(request_id=request_id)
    return len(waiting)


def approvals_settle_stuck() -> int:
    """Settle the requests left `executing` past their lease (a worker died during the call):
    called by the pipeline sweeper. Each is looked up where it acts; one that cannot be looked
    up waits for a person (approval_resolve)."""
    cutoff = timezone.now() - timedelta(seconds=settings.QUORUM_APPROVAL_LEASE_SECONDS)
    stuck = list(
        ApprovalRequest.objects.filter(
            status=rules.Status.EXECUTING, execution__started_at__lte=cutoff
        ).values_list("pk", flat=True)
    )
    for request_id in stuck:
        approval_settle(request_id=request_id)
    return len(stuck)


def approval_settle(*, request_id: int) -> ApprovalRequest:
    """executing → executed when the action is found to have taken effect (the review with our
    marker is on GitHub), → failed when it did not (a new request may be made); left executing
    with a reason when nobody can tell now, for the next sweep or a person."""
    request = ApprovalRequest.objects.select_related("workspace", "requester").get(pk=request_id)
    spec = action_class(request.action_class)
    if spec.lookup is None:
        _uncertain(
            request,
            "Its worker stopped during the call and what it did cannot be "
            "looked up: an approver checks and resolves it.",
        )
        return request
    try:
        result = spec.lookup(request.payload, request.pk)
    except Exception as exc:
        log.warning("approval %s: its outcome could not be looked up: %s", request_id, exc)
        _uncertain(request, f"Its worker stopped during the call; looking it up failed: {exc}")
        return request
    with transaction.atomic():
        locked = (
            ApprovalRequest.objects.select_for_update(of=("self",))
            .select_related("workspace", "requester")
            .get(pk=request_id)
        )
        if locked.status != rules.Status.EXECUTING:
            return locked  # settled meanwhile (its worker finished after all, or a person)
        locked.executed_at = timezone.now()
        if result is not None:
            locked.result, locked.error = result, ""
            approval_transition(
                locked,
                rules.Status.EXECUTED,
                f"{locked.action_class}.executed",
                APP,
                result=result,
                settled="found after its worker stopped",
            )
        else:
            locked.error = (
                "Its worker stopped during the call and it did not take effect: request it again."
            )
            approval_transition(
                locked, rules.Status.FAILED, "approval.failed", SYSTEM, reason=locked.error
            )
        if spec.settled is not None:
            spec.settled(locked.pk, result is not None)
    return locked


def _uncertain(request: ApprovalRequest, why: str) -> None:
    # Not a move: the request stays executing, and says why on its page.
    ApprovalRequest.objects.filter(pk=request.pk, status=rules.Status.EXECUTING).update(
        error=why[:2000]
    )


def _binding_error(request: ApprovalRequest, spec: ActionClass) -> str | None:
    """Why the stored request no longer binds what was approved, or None."""
    if payload_hash(request.action_class, request.payload) != request.payload_hash:
        return "The stored payload does not match the approved hash: it was altered."
    try:
        clean = spec.payload.model_validate(request.payload).model_dump()
    except ValidationError:
        return "The stored payload is no longer a valid payload for this action."
    if clean != request.payload:
        return "The stored payload is not in its validated form."
    workspace_id, target_type, target_id = spec.scope(request.payload)
    if (workspace_id, target_type, target_id) != (
        request.workspace_id,
        request.target_type,
        request.target_id,
    ):
        return "The payload acts on something other than the request's target in its workspace."
    return None


def approval_execute(*, request_id: int) -> ApprovalRequest:
    """Run an approved request exactly once. Before anything runs, the stored payload must still
    hash to what was approved and act on the request's own target, and the subject (the PR head
    on GitHub, the policy) must be unchanged; a refusal says why and is audited."""
    now = timezone.now()
    with transaction.atomic():
        locked = (
            ApprovalRequest.objects.select_for_update(of=("self",))
            .select_related("workspace", "requester")
            .get(pk=request_id)
        )
        if locked.status != rules.Status.APPROVED:
            # Executing, executed, failed or expired: a redelivery or a double click does nothing.
            return locked
        spec = action_class(locked.action_class)
        machine = approval_machine(locked)
        try:
            rules.check_executable(machine, current_head_sha=locked.head_sha, now=now)
            rules.start_execution(machine)
            Execution.objects.create(request=locked)
        except rules.ApprovalError as exc:
            expired = isinstance(exc, rules.ApprovalExpired)
            locked.error = str(exc)
            approval_transition(
                locked,
                rules.Status.EXPIRED if expired else rules.Status.FAILED,
                "approval.expired" if expired else "approval.failed",
                SYSTEM,
                reason=str(exc),
            )
            return locked
        approval_transition(locked, rules.Status.EXECUTING, None, None)
    # Outside the lock: the checks below call GitHub. Nobody else can start: we are executing.
    refusal = _binding_error(locked, spec) or stale_reason(spec, locked.payload, locked.head_sha)
    if refusal is not None:
        with transaction.atomic():
            locked.error, locked.executed_at = refusal, timezone.now()
            approval_transition(
                locked, rules.Status.FAILED, "approval.refused_at_execution", SYSTEM, reason=refusal
            )
        return locked
    try:
        result = spec.execute(locked.payload, locked.requester, locked)
    except Exception as exc:
        log.warning("approved request %s did not execute: %s", request_id, exc)
        with transaction.atomic():
            locked.error, locked.executed_at = str(exc)[:2000], timezone.now()
            approval_transition(
                locked, rules.Status.FAILED, "approval.failed", SYSTEM, error=str(exc)[:500]
            )
        return locked
    with transaction.atomic():
        locked.result, locked.executed_at = result, timezone.now()
        approvers = list(
            locked.decisions.filter(decision="approve").values_list("approver__email", flat=True)
        )
        approval_transition(
            locked,
            rules.Status.EXECUTED,
            f"{locked.action_class}.executed",
            APP,
            approvers=approvers,
            result=result,
        )
    return locked
