"""Recording findings and every change of a node's status.

This module is the only writer of ReviewNode.status. Agents confirm; people confirm, resolve,
dismiss and reopen. Each person's action is audited; a dismissal also writes a suppression hint.
Every status change of a round that already has a verdict decides it again (verdict_follow).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from guardrails.audit import Actor as AuditActor
from guardrails.audit import Target, audit_record
from reviews.domain import consensus, decisions
from reviews.domain.disagreements import find_disagreements, settle
from reviews.domain.fingerprints import node_fingerprint
from reviews.domain.node_tags import NodeTags
from reviews.domain.nodes import (
    Accepted,
    FileLines,
    NodePayload,
    Rejected,
    node_view_from_payload,
    parse_node_payload,
)
from reviews.domain.panel import LensVerdict, PanelStatus, panel_outcome
from reviews.domain.redaction import redact_text
from reviews.domain.threads import Proposal, ProposalKind, Subject, proposal_problem
from reviews.domain.types import NodeStatus, Priority, severity_for_priority
from reviews.live.events import emit
from reviews.models import MemoryFact, NodeConfirmation, ReviewerStream, ReviewNode, Verdict
from reviews.selectors import node_view
from reviews.services.threads import Thread, message_post_reviewer
from reviews.services.verdicts import verdict_follow
from workspaces.models import Membership
from workspaces.rules import Perm, Role, agent_role, role_allows

#: Reasons kept per stream for the UI; the count is exact, the list is a sample.
MAX_KEPT_REASONS = 20


@dataclass(frozen=True)
class RecordResult:
    node: ReviewNode | None
    rejection: str | None = None
    created: bool = False


def _payload_key(raw: Any) -> str:
    try:
        material = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        material = repr(raw)
    return hashlib.sha256(material.encode()).hexdigest()


def node_record(
    *,
    stream: ReviewerStream,
    payload: Any,
    file_lines: FileLines | None = None,
    file_text: Callable[[str], Sequence[str] | None] | None = None,
    evidence: Mapping[str, Any] | None = None,
    counted_at_end: bool = False,
) -> RecordResult:
    """Validate one `add_review_node` payload and store it, or count its rejection.

    Idempotent: the same payload recorded twice in one stream (a redelivered task, a retried
    tool call) yields the same node (unique on stream + payload hash). `evidence` is what an
    offline analyzer knows of its finding (rule, high precision), kept as `tags["analyzer"]`.
    A model's finding is written as it is made, so the page shows it at once: one statement
    when the stream's end counts its findings (`counted_at_end`: a model reviewer's run, see
    `stream_transition`), else one transaction of two (the node, the stream's count); a
    repeat is found by the unique key.
    """
    parsed = parse_node_payload(payload, file_lines=file_lines)
    if isinstance(parsed, Rejected):
        _count_rejections(stream, [parsed.reason])
        return RecordResult(node=None, rejection=parsed.reason)
    assert isinstance(parsed, Accepted)
    key = _payload_key(payload)
    node = _node_row(stream, parsed.node, key, file_text, evidence)
    # Inside a caller's transaction a repeat must not break it: a savepoint takes the refusal.
    alone = counted_at_end and not transaction.get_connection().in_atomic_block
    try:
        with nullcontext() if alone else transaction.atomic():
            node.save(force_insert=True)
            if not counted_at_end:
                ReviewerStream.objects.filter(pk=stream.pk).update(accepted=F("accepted") + 1)
            emit(stream.round.space_id, "review.node_added", node_id=node.pk)
    except IntegrityError:
        return RecordResult(node=ReviewNode.objects.get(stream=stream, payload_key=key))
    return RecordResult(node=node, created=True)


@dataclass(frozen=True)
class Finding:
    """One finding of a batch: the payload as a reviewer gives it, and an analyzer's evidence."""

    payload: Any
    evidence: Mapping[str, Any] | None = None


def node_record_many(
    *,
    stream: ReviewerStream,
    findings: Sequence[Finding],
    file_lines: FileLines | None = None,
    file_text: Callable[[str], Sequence[str] | None] | None = None,
    first_attempt: bool = False,
) -> list[RecordResult]:
    """`node_record` for a reviewer that has all its findings at once (an offline analyzer):
    the same validation, fingerprints, tags and events, written in one transaction of a few
    statements whatever their number. Idempotent like `node_record`: a payload the stream
    already holds yields its node. Results are in the order of `findings`.

    `first_attempt`: the stream's first run, under its step's claim, so it holds no finding
    yet (a later attempt starts by discarding the earlier one's): none is looked for, and its
    findings are counted when the run ends (`stream_transition`), not here."""
    results: list[RecordResult | None] = [None] * len(findings)
    rejections: list[str] = []
    fresh: dict[str, tuple[int, ReviewNode]] = {}  # payload key → first position, row
    repeats: list[tuple[int, str]] = []
    for i, finding in enumerate(findings):
        parsed = parse_node_payload(finding.payload, file_lines=file_lines)
        if isinstance(parsed, Rejected):
            rejections.append(parsed.reason)
            results[i] = RecordResult(node=None, rejection=parsed.reason)
            continue
        assert isinstance(parsed, Accepted)
        key = _payload_key(finding.payload)
        if key in fresh:
            repeats.append((i, key))
        else:
            fresh[key] = (i, _node_row(stream, parsed.node, key, file_text, finding.evidence))
    if rejections:
        _count_rejections(stream, rejections)
    # A first attempt writes its findings in one statement and reads none: no transaction
    # to open around it.
    with nullcontext() if first_attempt else transaction.atomic():
        stored = (
            {}
            if first_attempt or not fresh
            else {
                n.payload_key: n
                for n in ReviewNode.objects.filter(stream=stream, payload_key__in=list(fresh))
            }
        )
        new = [row for key, (_, row) in fresh.items() if key not in stored]
        # Keys unique per stream and the rows checked under this transaction: a concurrent
        # writer of the same stream is the same run re-delivered, and its rows are the same.
        created = ReviewNode.objects.bulk_create(new)
        if created and not first_attempt:
            ReviewerStream.objects.filter(pk=stream.pk).update(
                accepted=F("accepted") + len(created)
            )
        for node in created:
            emit(stream.round.space_id, "review.node_added", node_id=node.pk)
    for key, (i, row) in fresh.items():
        results[i] = RecordResult(node=stored.get(key, row), created=key not in stored)
    for i, key in repeats:
        results[i] = RecordResult(node=stored.get(key, fresh[key][1]))
    return [r for r in results if r is not None]


def _count_rejections(stream: ReviewerStream, reasons: Sequence[str]) -> None:
    """Count refused payloads on the stream; the first MAX_KEPT_REASONS reasons are kept."""
    with transaction.atomic():
        locked = ReviewerStream.objects.select_for_update().get(pk=stream.pk)
        kept = list(locked.rejection_reasons)
        locked.rejected = F("rejected") + len(reasons)
        locked.rejection_reasons = (kept + list(reasons))[: max(MAX_KEPT_REASONS, len(kept))]
        locked.save(update_fields=["rejected", "rejection_reasons"])


def _node_row(
    stream: ReviewerStream,
    p: NodePayload,
    key: str,
    file_text: Callable[[str], Sequence[str] | None] | None,
    evidence: Mapping[str, Any] | None,
) -> ReviewNode:
    """The unsaved row of an accepted payload, fingerprinted on the text around its anchor."""
    view = node_view_from_payload(p, node_id="new", agent=stream.agent, stream=stream.name)
    text = file_text(p.anchor.path) if (file_text and p.anchor) else None
    fix = p.fix
    return ReviewNode(
        space_id=stream.round.space_id,
        round_id=stream.round_id,
        stream=stream,
        payload_key=key,
        reasoning=p.reasoning or "",
        type=p.type.value,
        priority=p.priority.value,
        category=p.triage.category.value,
        severity=p.triage.severity.value,
        effort=p.triage.effort.value,
        path=p.anchor.path if p.anchor else "",
        start_line=p.anchor.start_line if p.anchor else None,
        end_line=p.anchor.end_line if p.anchor else None,
        side=p.anchor.side.value if p.anchor else "RIGHT",
        replacement_lines=list(fix.replacement_lines)
        if fix and fix.replacement_lines is not None
        else None,
        fix_diff=(fix.diff or "") if fix else "",
        fix_prompt=(fix.fix_prompt or "") if fix else "",
        confidence=p.confidence,
        title=p.title,
        body=p.body,
        map_anchor=p.map_anchor or "",
        triage_flags={
            "exploitable_externally": p.triage.exploitable_externally,
            "hot_path": p.triage.hot_path,
            "critical_path": p.triage.critical_path,
            "functional_effect": p.triage.functional_effect,
        },
        fingerprint=node_fingerprint(view, text),
        # Observations for other dimensions travel with the node; the lead pass routes them.
        tags=_initial_tags(p, evidence),
    )


def _initial_tags(p: NodePayload, evidence: Mapping[str, Any] | None) -> NodeTags:
    tags = NodeTags()
    if p.cross_notes:
        tags = tags.with_(cross_notes=[n.model_dump(mode="json") for n in p.cross_notes])
    if p.requirement_gap is not None:
        tags = tags.with_(requirement_gap=p.requirement_gap.value)
    if evidence:
        tags = tags.with_(analyzer=dict(evidence))
    return tags


def _locked(node: ReviewNode) -> ReviewNode:
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
    transaction (`follow=False`: the caller calls `_follow` itself, after its own audit
    event)."""
    before = node.status
    if not nodes_transition([(node, status)], also=also):
        return False
    if follow:
        _follow(node, reason or f"{before} → {status.value}")
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


def _follow(
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
        locked = _locked(node)
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
    return _person_action(
        consensus.Action.CONFIRM, node=node, user=user, reason=reason, request=request
    )


_AUDIT_ACTION = {
    consensus.Action.CONFIRM: "node.confirmed",
    consensus.Action.RESOLVE: "node.resolved",
    consensus.Action.DISMISS: "node.dismissed",
    consensus.Action.REOPEN: "node.reopened",
}


def _person_action(
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
        locked = _locked(node)
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
        _follow(locked, why, actor=user, request=request)
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
    return _person_action(
        consensus.Action.RESOLVE, node=node, user=user, reason=reason, request=request
    )


def node_dismiss(
    *, node: ReviewNode, user: Any, reason: str = "", request: Any = None
) -> ReviewNode:
    return _person_action(
        consensus.Action.DISMISS, node=node, user=user, reason=reason, request=request
    )


def node_reopen(
    *, node: ReviewNode, user: Any, reason: str = "", request: Any = None
) -> ReviewNode:
    return _person_action(
        consensus.Action.REOPEN, node=node, user=user, reason=reason, request=request
    )


# What a person may do to a finding from the page or the API (an agent's confirm is node_confirm).
PERSON_ACTIONS = {
    consensus.Action.CONFIRM: node_confirm_by_person,
    consensus.Action.RESOLVE: node_resolve,
    consensus.Action.DISMISS: node_dismiss,
    consensus.Action.REOPEN: node_reopen,
}


def _refuse_duplicate(node: ReviewNode) -> None:
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
    _refuse_duplicate(node)
    if agent := getattr(user, "quorum_agent", ""):
        # An agent's API token acts as the agent, as over MCP: it may confirm a peer's
        # finding; resolving, dismissing and reopening are refused (people decide).
        by = consensus.outside_agent(user.pk, agent)
        return _person_action(
            consensus.Action(action), node=node, user=user, reason=reason, request=request, by=by
        )
    return act(node=node, user=user, reason=reason, request=request)


def node_panel_apply(
    *, nodes: Sequence[ReviewNode], answers: Mapping[int, Mapping[str, tuple[Any, Any, str]]]
) -> dict[int, Any]:
    """Record the verification panel's lenses on a group of nodes and apply the survival rule
    to each (docs/domain-rules.md#the-panel-lenses): filtered nodes are dismissed and tagged
    (counted, never silently dropped); a lens that says REAL is a peer confirmation; a confirmed
    node takes lens 3's severity; a node no lens gave a valid verdict on is tagged unverified,
    the lenses' reasons for abstaining in its panel note. `answers`: node id → lens → (verdict,
    severity vote, reason), the lenses the node was put to; a node without "reachability" was
    not put to lens 1, its analyzer rule standing for it (reviews/domain/panel.py).

    The group costs the same few statements whatever its size and outcomes: the nodes are
    locked and read in one (with whether their round has a verdict to follow), their
    confirmations in one, every lens's row goes in one, the nodes whose status moves in one
    (`nodes_transition`), the others in one, and the round's verdict follows once."""

    outcomes: dict[int, Any] = {}
    with transaction.atomic():
        locked = list(
            ReviewNode.objects.select_for_update(of=("self",))
            .select_related("stream")
            .prefetch_related("confirmations")
            .filter(pk__in=[n.pk for n in nodes])
            .annotate(decided=Exists(Verdict.objects.filter(round=OuterRef("round_id"))))
            .order_by("pk")
        )
        given = {n.pk: n for n in nodes}
        rows: list[NodeConfirmation] = []
        moves: list[tuple[ReviewNode, NodeStatus]] = []
        for node in locked:
            caller = given[node.pk]
            if ReviewNode.round.is_cached(caller):
                node.round = caller.round  # the caller's round: the verdict's follow-up reads it
            lenses = answers[node.pk]
            confirmations = list(node.confirmations.all())
            rule = None
            if "reachability" not in lenses and node.tags.analyzer is not None:
                rule = node.tags.analyzer.rule
            no_verdict: tuple[Any, Any, str] = (None, None, "")
            outcome = panel_outcome(
                node_view(node, confirmations),
                reachability=lenses.get("reachability", no_verdict)[0],
                false_positive=lenses.get("false_positive", no_verdict)[0],
                severity_vote=lenses.get("severity", no_verdict)[1],
                abstentions={
                    lens: reason
                    for lens, (verdict, _, reason) in lenses.items()
                    if lens != "severity" and verdict is None
                },
                rule=rule,
            )
            outcomes[node.pk] = outcome
            held = {(c.agent, c.lens) for c in confirmations}
            confirmed_by = None
            for lens in ("reachability", "false_positive"):
                verdict, _, reason = lenses.get(lens, no_verdict)
                if verdict is None:
                    continue
                rows.append(
                    NodeConfirmation(
                        node=node,
                        agent=f"lens-{lens}",
                        lens=lens,
                        verdict=verdict.value,
                        reason=reason,
                    )
                )
                if verdict is LensVerdict.REAL and confirmed_by is None:
                    confirmed_by = f"lens-{lens}"
            _, severity_vote, severity_reason = lenses.get("severity", no_verdict)
            if severity_vote is not None:
                rows.append(
                    NodeConfirmation(
                        node=node,
                        agent="lens-severity",
                        lens=NodeConfirmation.Lens.SEVERITY,
                        verdict=severity_vote.value,
                        reason=severity_reason,
                    )
                )
            # A lens that already answered (a re-run step) keeps its first row.
            rows = [r for r in rows if r.node is not node or (r.agent, r.lens) not in held]
            node.tags = node.tags.with_(
                panel=outcome.status.value, panel_note=outcome.note, panel_lenses=list(lenses)
            )
            if outcome.status is PanelStatus.UNVERIFIED:
                # Counted and badged like a finding the panel skipped: nobody verified it.
                node.tags = node.tags.with_(unverified=True)
            if outcome.status is PanelStatus.CONFIRMED:
                node.priority, node.severity = outcome.priority.value, outcome.severity.value
                if outcome.node_type is not None:
                    node.type = outcome.node_type.value
            if confirmed_by is not None and node.status == NodeStatus.OPEN:
                moves.append(
                    (
                        node,
                        consensus.confirm(
                            status=NodeStatus(node.status),
                            author_agent=node.stream.agent,
                            by=consensus.Actor.agent(confirmed_by),
                        ),
                    )
                )
            elif outcome.status is PanelStatus.FILTERED and (
                NodeStatus.DISMISSED in consensus.ALLOWED_TRANSITIONS[NodeStatus(node.status)]
            ):
                # A finding a person closed meanwhile keeps their decision; one bad node must
                # not fail its whole group either.
                moves.append((node, NodeStatus.DISMISSED))
        NodeConfirmation.objects.bulk_create(rows)
        fields = ["tags", "priority", "severity", "type", "updated_at"]
        moved = nodes_transition(moves, also=fields)
        unmoved = [n for n in locked if n not in moved]
        now = timezone.now()
        for node in unmoved:
            node.updated_at = now
        if unmoved:
            ReviewNode.objects.bulk_update(unmoved, fields)
        if moved:
            # One follow-up for the group: the verdict is decided from every node at once.
            _follow(
                moved[0],
                f"verification panel on {len(locked)} finding(s)",
                decided=getattr(moved[0], "decided", None),  # read with the lock
            )
    return outcomes


# -- disagreements ---------------------------------------------------------------------------


PROPOSAL_WITHDRAWN = "withdrawn by its reviewer"


def node_apply_proposal(
    *, node: ReviewNode, proposal: Proposal, user: Any, request: Any = None
) -> ReviewNode:
    """What a finding's reviewer proposed about it, accepted by `user` (proposals.proposal_decide
    audits the decision): a lower priority, a withdrawal (the ordinary dismissal, with its
    suppression hint) or a new suggested change. Each is audited as the node's own change, and
    the verdict follows a priority or status change."""

    _refuse_duplicate(node)
    if proposal.kind is ProposalKind.WITHDRAW:
        return node_dismiss(node=node, user=user, reason=PROPOSAL_WITHDRAWN, request=request)
    with transaction.atomic():
        locked = _locked(node)
        before = {"priority": locked.priority, "fix": locked.fix_prompt or locked.fix_diff}
        if proposal.kind is ProposalKind.LOWER_PRIORITY:
            problem = proposal_problem(proposal, current=Priority(locked.priority))
            if problem or proposal.priority is None:
                raise consensus.TransitionError(
                    problem, code=ErrorCode.PROPOSAL_REFUSED, http_status=409
                )
            locked.priority = proposal.priority.value
            locked.severity = severity_for_priority(proposal.priority).value
            fields = ["priority", "severity", "updated_at"]
            action, after = "node.priority_lowered", {"priority": locked.priority}
        else:
            text = redact_text(proposal.fix.strip())
            # A diff stays a diff; anything else is the instruction a coding agent follows. The
            # old exact lines go: they were the fix the reviewer no longer suggests.
            is_diff = text.startswith(("--- ", "diff ", "@@"))
            locked.fix_diff, locked.fix_prompt = (text, "") if is_diff else ("", text)
            locked.replacement_lines = None
            fields = ["fix_diff", "fix_prompt", "replacement_lines", "updated_at"]
            action, after = "node.fix_refined", {"fix": text[:2000]}
        locked.save(update_fields=fields)
        space = locked.space
        audit_record(
            action=action,
            actor=AuditActor.of(user),
            workspace=space.workspace,
            target=Target("reviewnode", str(locked.pk), f"{locked.priority} {locked.title}"),
            payload={
                "before": {k: v[:2000] for k, v in before.items() if k in after},
                "after": after,
                "reason": f"proposed by {locked.stream.name} in the finding's thread",
                "space": space.pk,
            },
            request=request,
        )
        emit(locked.space_id, "review.node_changed", node_id=locked.pk)
        if proposal.kind is ProposalKind.LOWER_PRIORITY:
            _follow(
                locked,
                f"priority lowered from {before['priority']} on its reviewer's proposal",
                actor=user,
                request=request,
            )
    return locked


class DisagreementError(ApplicationError):
    """The disagreement is gone (already decided, a finding closed) or the decision is bad."""

    code = ErrorCode.DISAGREEMENT_REFUSED


DISAGREEMENT_DECISIONS = ("first", "second", "dismiss")


def disagreement_decide(
    *,
    review_round: Any,
    key: str,
    decision: str,
    user: Any,
    reason: str = "",
    request: Any = None,
) -> list[ReviewNode]:
    """A person decides a disagreement of the round, named by its `key`.

    `first`/`second`: every node of the location — canonical findings and the duplicates that
    hold the reviewers' positions — takes that side's priority and type, and the location keeps
    one finding: the other canonical findings are folded into the chosen side's as duplicates
    (reviews/domain/disagreements.py `settle`), it credits their reviewers, and each folded
    finding's text is posted in the kept finding's thread by its reviewer, so the line has one
    card and one GitHub comment and nobody's words are lost. `dismiss`: the disputed canonical
    findings are dismissed with the reason (the ordinary dismissal: audited, remembered as a
    suppression). Either way the decision is audited and the verdict decided again. Returns the
    nodes changed."""

    if decision not in DISAGREEMENT_DECISIONS:
        raise DisagreementError(f"Unknown decision {decision!r}.")
    reason = reason.strip()
    if decision == "dismiss" and not reason:
        raise DisagreementError("Say why the findings are dismissed.")
    with transaction.atomic():
        nodes = {
            str(n.pk): n
            for n in ReviewNode.objects.filter(round=review_round)
            .select_related("stream", "space__workspace")
            .select_for_update(of=("self",))
            .order_by("pk")
        }
        views = {node_id: node_view(n, []) for node_id, n in nodes.items()}
        found = next(
            (d for d in find_disagreements(views.values()) if d.key == str(key)),
            None,
        )
        if found is None:
            raise DisagreementError("This disagreement is already decided or no longer open.")
        canonical = nodes[found.key]
        sides = {
            "first": (found.first, found.first_reviewers),
            "second": (found.second, found.second_reviewers),
        }
        payload: dict[str, Any] = {
            "space": canonical.space_id,
            "decision": decision,
            "reason": reason,
            "location": found.first.location,
            "sides": {
                name: {
                    "priority": view.priority.value,
                    "type": view.type.value,
                    "reviewers": list(reviewers),
                }
                for name, (view, reviewers) in sides.items()
            },
            "nodes": [int(i) for i in found.node_ids],
        }
        changed: list[ReviewNode] = []
        if decision == "dismiss":
            audit_record(
                action="disagreement.decided",
                actor=AuditActor.of(user),
                workspace=canonical.space.workspace,
                target=Target("reviewnode", found.key, f"{canonical.priority} {canonical.title}"),
                payload=payload,
                request=request,
            )
            for node_id in found.canonical_ids:
                changed.append(
                    node_dismiss(
                        node=nodes[node_id],
                        user=user,
                        reason=f"disagreement decided: {reason}",
                        request=request,
                    )
                )
            return changed
        view, reviewers = sides[decision]
        settled = settle(found, "first" if decision == "first" else "second", views)
        kept = nodes[settled.kept]
        for after in settled.nodes:
            node = nodes[after.id]
            node.priority, node.type = after.priority.value, after.type.value
            node.severity = after.severity.value
            node.duplicate_of_id = int(after.duplicate_of) if after.duplicate_of else None
            node.credited_agents = list(after.credited_agents)
            node.tags = node.tags.with_(
                decided={"by": user.pk, "side": list(reviewers), "reason": reason}
            )
            if after.folded_into is not None:
                node.tags = node.tags.with_(folded_into=int(after.folded_into))
            node.save(
                update_fields=[
                    "priority",
                    "type",
                    "severity",
                    "duplicate_of",
                    "credited_agents",
                    "tags",
                    "updated_at",
                ]
            )
            changed.append(node)
        payload["kept"] = kept.pk
        payload["folded"] = [int(i) for i in settled.folded]
        audit_record(
            action="disagreement.decided",
            actor=AuditActor.of(user),
            workspace=canonical.space.workspace,
            target=Target("reviewnode", found.key, f"{canonical.priority} {canonical.title}"),
            payload=payload,
            request=request,
        )
        _fold_notes(
            kept=kept,
            folded=[(nodes[i], views[i]) for i in settled.folded],
            decided=f"{view.priority} {view.type}",
            reviewers=reviewers,
            user=user,
        )
        emit(canonical.space_id, "review.disagreement_decided", node_id=kept.pk)
        _follow(
            kept,
            f"disagreement decided for {', '.join(reviewers)}: {view.priority} {view.type}"
            + (f", #{', #'.join(settled.folded)} folded into it" if settled.folded else ""),
            actor=user,
            request=request,
        )
    return changed


def _fold_notes(
    *,
    kept: ReviewNode,
    folded: Sequence[tuple[ReviewNode, Any]],
    decided: str,
    reviewers: Sequence[str],
    user: Any,
) -> None:
    """Each folded finding's words, as its reviewer wrote them, in the kept finding's thread:
    the finding no longer has a card of its own, its text is not lost."""

    thread = Thread(space=kept.space, subject=Subject.node(kept.pk), node=kept, stream=None)
    who = user.email or user.get_username()
    for node, before in folded:
        fix = node.fix_prompt or node.fix_diff or "\n".join(node.replacement_lines or ())
        parts = [
            f"Finding #{node.pk} ({before.priority} {before.type}, {before.location}) was folded "
            f"into this one when {who} decided the disagreement for {', '.join(reviewers)} "
            f"({decided}). What it said:",
            f"**{node.title}**",
            node.body,
        ]
        if fix.strip():
            parts.append(f"Suggested fix:\n\n{fix}")
        message_post_reviewer(
            thread=thread, stream=node.stream, body="\n\n".join(p for p in parts if p.strip())
        )
