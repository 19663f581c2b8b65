"""The approval rules as a pure state machine. No Django here.

pending → approved | denied | expired | cancelled; approved → executing → executed | failed;
approved → expired | cancelled | failed (refused before it ran). `TRANSITIONS` is the table.
- the requester never approves their own request;
- an approver must hold the approver role (or admin/owner) when deciding;
- a request past its expiry, or whose pull request moved to a new head, never executes;
- a request executes at most once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from config.application_errors import ApplicationError, ErrorCode
from workspaces.rules import Perm, role_allows


class Status(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    EXECUTING = "executing"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    EXECUTED = "executed"
    FAILED = "failed"

    @property
    def label(self) -> str:
        """The status in words, for pages and messages ("Waiting for approval")."""
        return _STATUS_LABELS[self]


_STATUS_LABELS: dict[Status, str] = {
    Status.PENDING: "Waiting for approval",
    Status.APPROVED: "Approved, about to run",
    Status.EXECUTING: "Running",
    Status.DENIED: "Denied",
    Status.EXPIRED: "Expired",
    Status.CANCELLED: "Cancelled",
    Status.EXECUTED: "Done",
    Status.FAILED: "Failed",
}


TERMINAL = frozenset(
    {Status.DENIED, Status.EXPIRED, Status.CANCELLED, Status.EXECUTED, Status.FAILED}
)

#: status → the statuses it may move to; the one writer (guardrails/services.py
#: `approval_transition`) refuses every other move. A pending request stays pending while it
#: collects approvals; an approved one fails without executing when its checks refuse it.
TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.PENDING: frozenset(
        {Status.PENDING, Status.APPROVED, Status.DENIED, Status.EXPIRED, Status.CANCELLED}
    ),
    Status.APPROVED: frozenset({Status.EXECUTING, Status.EXPIRED, Status.CANCELLED, Status.FAILED}),
    Status.EXECUTING: frozenset({Status.EXECUTED, Status.FAILED}),
    **{status: frozenset() for status in TERMINAL},
}


def may_move(old: str, new: str) -> bool:
    return Status(new) in TRANSITIONS[Status(old)]


class Policy(StrEnum):
    ALLOW = "allow"
    REQUIRE_APPROVAL = "require_approval"
    DENY = "deny"

    @property
    def label(self) -> str:
        return {
            Policy.ALLOW: "Allow",
            Policy.REQUIRE_APPROVAL: "Require approval",
            Policy.DENY: "Deny",
        }[self]


class CheckpointOutcome(StrEnum):
    """What the checkpoint did with a mutating action."""

    ALLOWED = "allowed"  # it ran
    PENDING = "pending"  # it waits for an approver
    REFUSED = "refused"  # the policy or a missing approver stopped it


class ActionName(StrEnum):
    """The action classes a workspace sets a policy for (guardrails/actions.py)."""

    PR_PUBLISH = "prPublish"
    ISSUE_CREATE = "issueCreate"
    POLICY_CHANGE = "policyChange"
    CHECK_RUN = "checkRun"
    THREAD_ANSWER = "threadAnswer"


class Decision(StrEnum):
    """What an approver decides about a request."""

    APPROVE = "approve"
    DENY = "deny"

    @property
    def done(self) -> str:
        """The decision as it reads once made: "approved", "denied"."""
        return {Decision.APPROVE: "approved", Decision.DENY: "denied"}[self]


def decision_flash(
    *, number: int, done: str, approving: bool, approved: bool, approvals: int, required: int
) -> str:
    """The message after an approver decides. `done` is the decision's past tense from its enum
    ("approved", "denied"); `approving` whether it was an approval; `approved` whether the
    request now has every approval it needs."""
    if approving and not approved:
        missing = max(required - approvals, 1)
        more = "1 more approval" if missing == 1 else f"{missing} more approvals"
        return f"Request #{number}: your approval is recorded; it needs {more} before it runs."
    if approving:
        return f"Request #{number} {done}: it runs now."
    return f"Request #{number} {done}: nothing it asked for happens."


class ApprovalError(ApplicationError):
    """A decision or execution the rules refuse; the message says why."""

    code = ErrorCode.APPROVAL_REFUSED


class ApprovalExpired(ApprovalError):
    """The request is past its expiry: whoever catches it marks the request expired."""

    code = ErrorCode.APPROVAL_EXPIRED


@dataclass(frozen=True)
class Approval:
    requester_id: int
    head_sha: str
    expires_at: datetime
    approvals_required: int = 1
    status: Status = Status.PENDING
    approvers: frozenset[int] = field(default_factory=frozenset)
    executions: int = 0


def _open_check(approval: Approval, now: datetime) -> None:
    if approval.status in TERMINAL:
        raise ApprovalError(f"The request is {approval.status.value}.")
    if now >= approval.expires_at:
        raise ApprovalExpired("The request has expired.")


def approve(
    approval: Approval,
    *,
    approver_id: int,
    approver_role: str | None,
    now: datetime,
    required_perm: Perm = Perm.DECIDE_APPROVAL,
) -> Approval:
    _open_check(approval, now)
    if approval.status is not Status.PENDING:
        raise ApprovalError(f"The request is already {approval.status.value}.")
    if approver_id == approval.requester_id:
        raise ApprovalError("You asked for this: someone else has to approve it.")
    if not role_allows(approver_role, required_perm):
        raise ApprovalError(
            "Approving needs the approver role (or admin or owner)."
            if required_perm is Perm.DECIDE_APPROVAL
            else "Approving this needs the admin or owner role."
        )
    if approver_id in approval.approvers:
        raise ApprovalError("You already approved this request.")
    approvers = approval.approvers | {approver_id}
    status = Status.APPROVED if len(approvers) >= approval.approvals_required else Status.PENDING
    return replace(approval, approvers=approvers, status=status)


def deny(
    approval: Approval, *, approver_id: int, approver_role: str | None, now: datetime
) -> Approval:
    _open_check(approval, now)
    if approval.status is not Status.PENDING:
        raise ApprovalError(f"The request is already {approval.status.value}.")
    if (
        not role_allows(approver_role, Perm.DECIDE_APPROVAL)
        and approver_id != approval.requester_id
    ):
        raise ApprovalError("Denying needs the approver role (or admin or owner).")
    # A requester withdrawing their own request is a cancellation, not a denial.
    return replace(
        approval, status=Status.CANCELLED if approver_id == approval.requester_id else Status.DENIED
    )


def expire(approval: Approval, *, now: datetime) -> Approval:
    if approval.status in (Status.PENDING, Status.APPROVED) and now >= approval.expires_at:
        return replace(approval, status=Status.EXPIRED)
    return approval


def withdraw(approval: Approval, *, requester_id: int, now: datetime) -> Approval:
    """The requester may take back their own open request, whatever their role is now."""
    if requester_id != approval.requester_id:
        raise ApprovalError("Only the person who asked can withdraw a request.")
    if approval.status not in (Status.PENDING, Status.APPROVED):
        raise ApprovalError(f"The request is {approval.status.value}: nothing to withdraw.")
    return replace(approval, status=Status.CANCELLED)


def start_execution(approval: Approval) -> Approval:
    """approved → executing: the one transition that lets a run begin."""
    if approval.status is not Status.APPROVED:
        raise ApprovalError(f"The request is {approval.status.value}, not approved.")
    return replace(approval, status=Status.EXECUTING)


def lease_over(started_at: datetime, *, now: datetime, lease_seconds: int) -> bool:
    """Whether an execution has run past its lease: its worker is presumed gone, and what it
    did is looked up (or decided by a person) rather than waited for."""
    return (now - started_at).total_seconds() >= lease_seconds


RESOLUTION_REASON_MAX = 500


def resolve(
    approval: Approval,
    *,
    resolver_id: int,
    resolver_role: str | None,
    executed: bool,
    reason: str,
    lease_is_over: bool,
    required_perm: Perm = Perm.DECIDE_APPROVAL,
) -> Approval:
    """A person settles an execution nobody could confirm: executing → executed | failed.
    Only once its lease is over (its worker may still be running before), only by someone
    who could have approved it and did not ask for it, and always with a reason."""
    if approval.status is not Status.EXECUTING:
        raise ApprovalError(f"The request is {approval.status.value}: nothing to resolve.")
    if not lease_is_over:
        raise ApprovalError("The request is still running within its lease: wait for it to finish.")
    if resolver_id == approval.requester_id:
        raise ApprovalError("You asked for this: someone else has to resolve it.")
    if not role_allows(resolver_role, required_perm):
        raise ApprovalError("Resolving needs the role that approves this request.")
    reason = reason.strip()
    if not reason:
        raise ApprovalError("Say what you found: a reason is required.")
    if len(reason) > RESOLUTION_REASON_MAX:
        raise ApprovalError(f"A reason has at most {RESOLUTION_REASON_MAX} characters.")
    return replace(approval, status=Status.EXECUTED if executed else Status.FAILED)


# Policies ordered from the strictest: a change towards `allow` loosens.
_POLICY_STRENGTH = {Policy.DENY: 2, Policy.REQUIRE_APPROVAL: 1, Policy.ALLOW: 0}


def policy_for_requester(policy: Policy, *, by_agent: bool) -> Policy:
    """An agent never acts on its own authority: what the workspace lets a person do at once
    waits for a person's approval when an agent asks; a denial stays a denial."""
    if by_agent and policy == Policy.ALLOW:
        return Policy.REQUIRE_APPROVAL
    return policy


@dataclass(frozen=True)
class PolicySetting:
    policy: Policy
    approvals_required: int
    expires_after_minutes: int


def loosens(before: PolicySetting, after: PolicySetting) -> bool:
    """Whether `after` lets something through that `before` would not: a weaker policy, fewer
    approvals or a longer-lived request. Tightening never needs a second person."""
    if _POLICY_STRENGTH[after.policy] != _POLICY_STRENGTH[before.policy]:
        return _POLICY_STRENGTH[after.policy] < _POLICY_STRENGTH[before.policy]
    if after.policy is not Policy.REQUIRE_APPROVAL:
        return False  # allow and deny ignore the approval settings
    return (
        after.approvals_required < before.approvals_required
        or after.expires_after_minutes > before.expires_after_minutes
    )


def check_executable(approval: Approval, *, current_head_sha: str, now: datetime) -> None:
    """Raise unless the request may execute now: approved, fresh, never executed."""
    if approval.executions:
        raise ApprovalError("The request was already executed.")
    if approval.status is not Status.APPROVED:
        raise ApprovalError(
            f"Only an approved request executes (this one is {approval.status.value})."
        )
    if now >= approval.expires_at:
        raise ApprovalExpired("The request expired before it could execute.")
    if current_head_sha != approval.head_sha:
        raise ApprovalError(
            "The pull request has a new head since the request was made: the approval is stale."
        )


def executed(approval: Approval, *, ok: bool) -> Approval:
    return replace(
        approval,
        status=Status.EXECUTED if ok else Status.FAILED,
        executions=approval.executions + 1,
    )
