"""Every change of a finding's status, and the decisions that make one.

This module is the only writer of ReviewNode.status. Agents confirm; people confirm, resolve,
dismiss and reopen. Each person's action is audited; a dismissal also writes a suppression hint.
Every status change of a round that already has a verdict decides it again (verdict_follow).
Recording findings is in node_recording.py, the verification panel in node_panel.py, a
decided disagreement in disagreements.py and an accepted proposal in proposals.py; each moves
a status through `nodes_transition` here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from guardrails.audit import Actor as AuditActor
from guardrails.audit import Target, audit_record
from reviews.domain import consensus, decisions
from reviews.domain.types import NodeStatus, Priority
from reviews.live.events import emit
from reviews.models import MemoryFact, NodeConfirmation, ReviewNode
from reviews.selectors import node_view
from reviews.services.verdicts import verdict_follow
from workspaces.models import Membership
from workspaces.rules import Perm, Role, agent_role, role_allows


def node_locked(node: ReviewNode) -> ReviewNode:
    """The node's row locked for a change, with its stream and workspace."""
    return (
        ReviewNode.objects.select_for_update(of=("self",))
        .select_related("stream", "space__workspace")
        .get(pk=node.pk)
    )


def node_transition(
    node: ReviewNode,
    status: NodeStatus,
    *,
    reason: str = "",
    follow: bool = True,
    also: Sequence[str] = (),
) -> bool:
    """Move one node (see `nodes_transition`), called with the node's row locked; staying in
    the same status writes nothing and returns False. The round's verdict follows in the same
    transaction (`follow=False`: the caller calls `node_follow` itself, after its own audit
    event)."""
    before = node.status
    if not nodes_transition([(node, status)], also=also):
        return False
    if follow:
        node_follow(node, reason or f"{before} → {status.value}")
    return True


def nodes_transition(
    moves: Sequence[tuple[ReviewNode, NodeStatus]], *, also: Sequence[str] = ()
) -> list[ReviewNode]:
    """The only writer of ReviewNode.status, called with the nodes' rows locked. Raises
    TransitionError unless the status ladder (reviews/domain/consensus.py) allows every move;
    a node staying in its status is left alone. `also` names other fields the caller changed
    on the nodes, saved in the same statement: one statement whatever the number of nodes.
    Returns the nodes that moved; their verdict is the caller's to follow."""
    moved: list[ReviewNode] = []
    for node, status in moves:
        if node.status == status.value:
            continue
        consensus.check_transition(NodeStatus(node.status), status)
        node.status = status.value
        moved.append(node)
    fields = list(dict.fromkeys(["status", "updated_at", *also]))
    if len(moved) == 1:
        moved[0].save(update_fields=fields)
    elif moved:
        now = timezone.now()
        for node in moved:
            node.updated_at = now
        ReviewNode.objects.bulk_update(moved, fields)
    for node in moved:
        emit(node.space_id, "review.node_status", node_id=node.pk, status=node.status)
    return moved


def node_follow(
    node: ReviewNode,
    why: str,
    *,
    actor: Any = None,
    request: Any = None,
    decided: bool | None = None,
) -> None:
    """Decide the verdict of the node's round again after a decision on the node (a priority
    or type change included), recording who and why. `decided`: as `verdict_follow` takes it."""
    verdict_follow(
        review_round=node.round,
        reason=f"{node.priority} #{node.pk} {node.title[:120]}: {why}",
        actor=actor,
        request=request,
        decided=decided,
    )


def node_confirm(
    *, node: ReviewNode, by_agent: str, lens: str = NodeConfirmation.Lens.PEER, reason: str = ""
) -> ReviewNode:
    """A peer agent confirms a node (docs/domain-rules.md#consensus-and-peer-confirmation).
    Raises SelfConfirmationError for its author."""
    with transaction.atomic():
        locked = node_locked(node)
        new_status = consensus.confirm(
            status=NodeStatus(locked.status),
            author_agent=locked.stream.agent,
            by=consensus.Actor.agent(by_agent),
        )
        NodeConfirmation.objects.get_or_create(
            node=locked, agent=by_agent, lens=lens, defaults={"verdict": "real", "reason": reason}
        )
        node_transition(locked, new_status, reason=f"confirmed by {by_agent}")
    return locked


def node_confirm_by_person(
    *, node: ReviewNode, user: Any, reason: str = "", request: Any = None
) -> ReviewNode:
    """A person confirms a node as a peer: recorded under `person:<id>`, audited."""
    return person_action(
        consensus.Action.CONFIRM, node=node, user=user, reason=reason, request=request
    )


_AUDIT_ACTION = {
    consensus.Action.CONFIRM: "node.confirmed",
    consensus.Action.RESOLVE: "node.resolved",
    consensus.Action.DISMISS: "node.dismissed",
    consensus.Action.REOPEN: "node.reopened",
}


def person_action(
    action: consensus.Action,
    *,
    node: ReviewNode,
    user: Any,
    reason: str,
    request: Any,
    by: consensus.Actor | None = None,
) -> ReviewNode:
    """`by`: who acts for consensus when it is not the user as a person (an outside agent,
    reviews/services/outside_agents.py); the audit trail names the user either way. A refusal
    by the workspace's rule on dismissing a P0 is audited once the transaction is undone."""
    try:
        return _person_action_locked(
            action, node=node, user=user, reason=reason, request=request, by=by
        )
    except ApproverRequired as refused:
        audit_record(
            action="permission.denied",
            actor=AuditActor.of(user),
            workspace=refused.node.space.workspace,
            target=Target(
                "reviewnode", str(refused.node.pk), f"{refused.node.priority} {refused.node.title}"
            ),
            payload={
                "attempted": f"{action.value} a {refused.node.priority} finding",
                "role": refused.role or "",
                "needs": Role.APPROVER.value,
                "rule": "p0_dismissal_needs_approver",
            },
            request=request,
        )
        raise


def _person_action_locked(
    action: consensus.Action,
    *,
    node: ReviewNode,
    user: Any,
    reason: str,
    request: Any,
    by: consensus.Actor | None,
) -> ReviewNode:
    with transaction.atomic():
        locked = node_locked(node)
        before = locked.status
        priority = Priority(locked.priority)
        if problem := decisions.reason_problem(action, priority, reason):
            raise ReasonRequired(problem)
        person = by or consensus.Actor.person(str(user.pk))
        new_status = consensus.apply_action(
            action, status=NodeStatus(before), author_agent=locked.stream.agent, by=person
        )
        _check_approver_rule(locked, action, priority, user)
        if action in _DECISIONS:
            _record_decision(locked, action, user, reason)
        if action is consensus.Action.CONFIRM:
            NodeConfirmation.objects.get_or_create(
                node=locked,
                agent=consensus.person_identity(person),
                lens=NodeConfirmation.Lens.PEER,
                defaults={"verdict": "real", "reason": reason},
            )
        node_transition(locked, new_status, follow=False)
        space = locked.space
        if action is consensus.Action.DISMISS:
            fact = consensus.suppression_fact_for_dismissal(
                workspace_id=str(space.workspace_id),
                repository_id=str(space.pull_request.repository_id),
                node=node_view(locked),
                reason=reason,
                fingerprint=locked.fingerprint or None,
            )
            MemoryFact.objects.create(
                workspace_id=space.workspace_id,
                repository_id=space.pull_request.repository_id,
                kind=MemoryFact.Kind.SUPPRESSION,
                fingerprint=fact.fingerprint or "",
                category=fact.category.value,
                path_pattern=fact.path_pattern,
                statement=fact.statement,
                confidence=fact.confidence,
                binding=fact.binding,
                source_node=locked,
                created_by=user,
            )
        audit_record(
            action=_AUDIT_ACTION[action],
            actor=AuditActor.of(user),
            workspace=space.workspace,
            target=Target("reviewnode", str(locked.pk), f"{locked.priority} {locked.title}"),
            payload={
                "before": before,
                "after": new_status.value,
                "reason": reason,
                "space": space.pk,
            },
            request=request,
        )
        # After the node's own audit event, so the trail reads decision, then verdict. A second
        # confirmation changes no status but names a new peer: it is decided again too.
        who = "a person" if person.kind is consensus.ActorKind.PERSON else "an agent"
        why = f"{_AUDIT_ACTION[action].split('.')[1]} by {who}" + (
            f" ({reason.strip()[:100]})" if reason.strip() else ""
        )
        node_follow(locked, why, actor=user, request=request)
    return locked


class ReasonRequired(ApplicationError):
    code = ErrorCode.REASON_REQUIRED
    http_status = 400


class ApproverRequired(ApplicationError):
    """The workspace keeps this decision for approvers (docs/domain-rules.md, "Decisions
    carry their reason"); `node` and `role` are for the refusal's audit event."""

    code = ErrorCode.APPROVER_REQUIRED
    http_status = 403

    def __init__(self, message: str, *, node: ReviewNode, role: str | None) -> None:
        super().__init__(message)
        self.node, self.role = node, role


def _check_approver_rule(
    node: ReviewNode, action: consensus.Action, priority: Priority, user: Any
) -> None:
    """Raise ApproverRequired when the workspace's rule keeps this dismissal for approvers and
    the user's role (an agent's capped, as everywhere) may not approve a publish."""
    workspace = node.space.workspace
    if not decisions.needs_approver(
        action, priority, approver_rule=workspace.p0_dismissal_needs_approver
    ):
        return  # no role to read
    role = (
        Membership.objects.filter(workspace=workspace, user=user)
        .values_list("role", flat=True)
        .first()
    )
    agent: str = getattr(user, "quorum_agent", "")
    if role is not None and agent:
        role = agent_role(role)
    problem = decisions.approver_problem(
        action,
        priority,
        approver_rule=True,
        is_approver=role_allows(role, Perm.DECIDE_APPROVAL),
    )
    if problem:
        raise ApproverRequired(problem, node=node, role=role)


#: The person's decisions a finding shows: who, why and when (a reopen clears them).
_DECISIONS = (consensus.Action.RESOLVE, consensus.Action.DISMISS, consensus.Action.REOPEN)


def _record_decision(node: ReviewNode, action: consensus.Action, user: Any, reason: str) -> None:
    reopened = action is consensus.Action.REOPEN
    node.decided_by = None if reopened else user
    node.decision_reason = "" if reopened else reason.strip()
    node.decided_at = None if reopened else timezone.now()
    ReviewNode.objects.filter(pk=node.pk).update(
        decided_by=node.decided_by, decision_reason=node.decision_reason, decided_at=node.decided_at
    )


def node_resolve(
    *, node: ReviewNode, user: Any, reason: str = "", request: Any = None
) -> ReviewNode:
    return person_action(
        consensus.Action.RESOLVE, node=node, user=user, reason=reason, request=request
    )


def node_dismiss(
    *, node: ReviewNode, user: Any, reason: str = "", request: Any = None
) -> ReviewNode:
    return person_action(
        consensus.Action.DISMISS, node=node, user=user, reason=reason, request=request
    )


def node_reopen(
    *, node: ReviewNode, user: Any, reason: str = "", request: Any = None
) -> ReviewNode:
    return person_action(
        consensus.Action.REOPEN, node=node, user=user, reason=reason, request=request
    )


# What a person may do to a finding from the page or the API (an agent's confirm is node_confirm).
PERSON_ACTIONS = {
    consensus.Action.CONFIRM: node_confirm_by_person,
    consensus.Action.RESOLVE: node_resolve,
    consensus.Action.DISMISS: node_dismiss,
    consensus.Action.REOPEN: node_reopen,
}


def refuse_duplicate(node: ReviewNode) -> None:
    """A demoted duplicate is decided with its canonical finding, never on its own."""
    if node.duplicate_of_id is not None:
        raise consensus.TransitionError(
            f"#{node.pk} is a duplicate: it is decided with its canonical finding "
            f"#{node.duplicate_of_id}.",
            code=ErrorCode.DUPLICATE_NODE,
            http_status=409,
        )


def node_act(
    *, node: ReviewNode, action: str, user: Any, reason: str = "", request: Any = None
) -> ReviewNode:
    """A person's decision on a finding, the page's buttons and the API alike (an agent's token
    acts as its agent): an unknown action or a demoted duplicate (decided with its canonical
    finding) is refused before the status rules are asked."""
    try:
        act = PERSON_ACTIONS[consensus.Action(action)]
    except (ValueError, KeyError):
        allowed = ", ".join(a.value for a in PERSON_ACTIONS)
        raise consensus.TransitionError(
            f"Unknown action {action!r}; use {allowed}.", code=ErrorCode.UNKNOWN_ACTION
        ) from None
    refuse_duplicate(node)
    if agent := getattr(user, "quorum_agent", ""):
        # An agent's API token acts as the agent, as over MCP: it may confirm a peer's
        # finding; resolving, dismissing and reopening are refused (people decide).
        by = consensus.outside_agent(user.pk, agent)
        return person_action(
            consensus.Action(action), node=node, user=user, reason=reason, request=request, by=by
        )
    return act(node=node, user=user, reason=reason, request=request)
