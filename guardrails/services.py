"""The checkpoint and the approval requests: the one path from a person's wish to a mutation.

`checkpoint` is what every mutating action calls. Approval status changes only here, each
transition checked by the pure rules (guardrails/rules.py) and audited.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError

from guardrails import rules
from guardrails.actions import action_class
from guardrails.audit import APP, SYSTEM, Actor, Target, audit_record
from guardrails.models import ActionPolicy, ApprovalDecision, ApprovalRequest, Execution
from guardrails.notify import approval_notices_queue, approvers_reachable, origin_of
from guardrails.presence import present_approvers
from workspaces.models import Membership, Workspace
from workspaces.rules import Perm, ReadOnlyError, RuleError, archived_message
from workspaces.selectors import archived_approval_target

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


def _machine(request: ApprovalRequest) -> rules.Approval:
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


def _audit(
    request: ApprovalRequest, action: str, actor: Actor, http_request: Any = None, **extra: Any
) -> None:
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


def _notify(request: ApprovalRequest, kind: str) -> None:
    from guardrails.events import approvals_emit

    if request.target_type == "reviewspace":
        # A publish asked for, decided or executed changes what the review's status says.
        from reviews.models import ReviewSpace
        from reviews.services.spaces import space_status_refresh

        # A review deleted for good with its repository has no status left to tell.
        with contextlib.suppress(ReviewSpace.DoesNotExist):
            space_status_refresh(space=int(request.target_id))
    approvals_emit(request, kind)


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
    who = Actor.of(actor)
    base = {"action_class": action, "payload": clean, "policy": effective.value}
    if effective == rules.Policy.DENY:
        reason = f"The workspace policy denies {spec.description.lower()}."
        audit_record(
            action="checkpoint.refused",
            actor=who,
            workspace=workspace,
            target=target,
            payload={**base, "reason": reason},
            request=http_request,
        )
        return CheckpointResult(rules.CheckpointOutcome.REFUSED, reason)
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
        audit_record(
            action="checkpoint.refused",
            actor=who,
            workspace=workspace,
            target=target,
            payload={**base, "reason": NO_APPROVER},
            request=http_request,
        )
        return CheckpointResult(rules.CheckpointOutcome.REFUSED, NO_APPROVER)
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
        _audit(request, "approval.requested", who, http_request, payload=clean, **extra)
        transaction.on_commit(lambda: _notify(request, "requested"))
        # Approvers are told by email and the workspace's webhook, from a background task.
        origin = origin_of(http_request)
        transaction.on_commit(lambda: approval_notices_queue(request.pk, origin))
    return CheckpointResult(rules.CheckpointOutcome.PENDING, "Waiting for an approver.", request)


def _run_allowed(
    spec: Any,
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
    reason = _stale_reason(spec, clean, clean.get("head_sha", ""))
    if reason is None:
        try:
            result = spec.execute(clean, actor)
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


def _stale_reason(spec: Any, payload: dict[str, Any], bound_head: str) -> str | None:
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
    error = None
    with transaction.atomic(durable=True):
        locked = (
            ApprovalRequest.objects.select_for_update(of=("self",))
            .select_related("workspace", "requester")
            .get(pk=request.pk)
        )
        role = (
            Membership.objects.filter(workspace=locked.workspace, user=approver)
            .values_list("role", flat=True)
            .first()
        )
        machine = _machine(locked)
        if (
            rules.expire(machine, now=now).status is rules.Status.EXPIRED
            and machine.status is not rules.Status.EXPIRED
        ):
            approval_transition(locked, rules.Status.EXPIRED, "approval.expired", SYSTEM)
            error = "The request has expired."
        else:
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
                    after = rules.deny(
                        machine, approver_id=approver.pk, approver_role=role, now=now
                    )
                with transaction.atomic():
                    ApprovalDecision.objects.create(
                        request=locked, approver=approver, decision=decision, reason=reason
                    )
            except rules.ApprovalError as exc:
                error = str(exc)
            except IntegrityError:
                error = "You already decided on this request."
            else:
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
    if error is not None:
        with transaction.atomic():
            _audit(
                locked,
                "approval.refused",
                Actor.of(approver),
                http_request,
                decision=decision,
                reason=error,
            )
        raise RuleError(error)
    return locked


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
    _audit(request, audit_action, actor, http_request, **extra)
    transaction.on_commit(lambda: _notify(request, status.value))


def _queue_execution(request_id: int) -> None:
    from config.background import QueueUnavailable, submit_now

    try:
        submit_now("guardrails.approval_execute", request_id)
    except QueueUnavailable as exc:
        # The decision is committed; the sweeper runs the request once the queue is back.
        log.warning("approved request %s waits for the task queue: %s", request_id, exc)


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


def approval_resolve(
    *, request: ApprovalRequest, actor: Any, executed: bool, reason: str, http_request: Any = None
) -> ApprovalRequest:
    """A person settles an execution past its lease that could not be looked up: they checked
    (on GitHub) and say whether it took effect, with a reason; audited as approval.resolved."""
    now = timezone.now()
    with transaction.atomic(durable=True):
        locked = (
            ApprovalRequest.objects.select_for_update(of=("self",))
            .select_related("workspace", "requester")
            .get(pk=request.pk)
        )
        spec = action_class(locked.action_class)
        role = (
            Membership.objects.filter(workspace=locked.workspace, user=actor)
            .values_list("role", flat=True)
            .first()
        )
        started = Execution.objects.filter(request=locked).values_list("started_at", flat=True)
        try:
            rules.resolve(
                _machine(locked),
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


def _binding_error(request: ApprovalRequest, spec: Any) -> str | None:
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
        machine = _machine(locked)
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
    refusal = _binding_error(locked, spec) or _stale_reason(spec, locked.payload, locked.head_sha)
    if refusal is not None:
        with transaction.atomic():
            locked.error, locked.executed_at = refusal, timezone.now()
            approval_transition(
                locked, rules.Status.FAILED, "approval.refused_at_execution", SYSTEM, reason=refusal
            )
        return locked
    try:
        result = spec.execute(locked.payload, locked.requester)
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


def approval_withdraw(
    *, request: ApprovalRequest, actor: Any, http_request: Any = None
) -> ApprovalRequest:
    """The requester takes back their own open request; no role is needed to do that."""
    with transaction.atomic(durable=True):
        locked = (
            ApprovalRequest.objects.select_for_update(of=("self",))
            .select_related("workspace", "requester")
            .get(pk=request.pk)
        )
        try:
            rules.withdraw(_machine(locked), requester_id=actor.pk, now=timezone.now())
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


def _policy_setting(policy: ActionPolicy) -> dict[str, Any]:
    return {
        "policy": policy.policy,
        "approvals_required": policy.approvals_required,
        "expires_after_minutes": policy.expires_after_minutes,
    }


def _as_rule(setting: dict[str, Any]) -> rules.PolicySetting:
    return rules.PolicySetting(
        rules.Policy(setting["policy"]),
        setting["approvals_required"],
        setting["expires_after_minutes"],
    )


def policy_digest(setting: dict[str, Any]) -> str:
    """A 40-hex fingerprint of a policy setting: the 'head' a policyChange request binds."""
    canonical = json.dumps(setting, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(canonical.encode(), usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class PolicyUpdate:
    policy: ActionPolicy
    applied: bool
    request: ApprovalRequest | None = None
    reason: str = ""


def policy_update(
    *,
    workspace: Workspace,
    action: str,
    policy: str,
    approvals_required: int,
    expires_after_minutes: int,
    actor: Any,
    http_request: Any = None,
) -> PolicyUpdate:
    """Tightening applies at once; loosening becomes a policyChange request that another admin or
    owner must approve, so no single person can switch a guardrail off."""
    try:
        spec = action_class(action)
    except ValueError:
        # A form's hidden field edited, or a stale page: said, not a server error.
        raise RuleError(
            "Unknown action class: reload the page and choose one of its policies."
        ) from None
    if spec.fixed_policy is not None:
        raise RuleError(f"The policy of {action} is fixed and cannot be changed.")
    if policy not in rules.Policy.__members__.values():
        raise RuleError(f"Unknown policy {policy!r}; use allow, require_approval or deny.")
    if policy not in spec.policies:
        raise RuleError(f"The policy of {action} is one of {', '.join(spec.policies)}.")
    if not 1 <= approvals_required <= 5:
        raise RuleError("Approvals required must be between 1 and 5.")
    if not 5 <= expires_after_minutes <= 7 * 24 * 60:
        raise RuleError("Requests must expire after 5 minutes to 7 days.")
    current = policy_for(workspace, action)
    before = _policy_setting(current)
    after = {
        "policy": policy,
        "approvals_required": approvals_required,
        "expires_after_minutes": expires_after_minutes,
    }
    if before == after:
        return PolicyUpdate(current, applied=False, reason="Nothing changed.")
    if not rules.loosens(_as_rule(before), _as_rule(after)):
        row = policy_apply(
            workspace=workspace,
            action=action,
            before=before,
            after=after,
            actor=actor,
            http_request=http_request,
        )
        return PolicyUpdate(row, applied=True)
    result = checkpoint(
        action="policyChange",
        actor=actor,
        workspace=workspace,
        target=Target("actionpolicy", action, action),
        payload={
            "workspace": workspace.pk,
            "action_class": action,
            "head_sha": policy_digest(before),
            "before": before,
            "after": after,
        },
        http_request=http_request,
    )
    return PolicyUpdate(current, applied=False, request=result.request, reason=result.reason)


def policy_apply(
    *,
    workspace: Workspace,
    action: str,
    before: dict[str, Any],
    after: dict[str, Any],
    actor: Any,
    http_request: Any = None,
) -> ActionPolicy:
    """Write a policy setting (the tightening path, or an approved policyChange)."""
    with transaction.atomic():
        row, _ = ActionPolicy.objects.update_or_create(
            workspace=workspace, action_class=action, defaults=after
        )
        audit_record(
            action="guardrails.policy_changed",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target("actionpolicy", action, action),
            payload={"before": before, "after": after},
            request=http_request,
        )
    return row
