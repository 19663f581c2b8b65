"""Dismissal memory in the lead pass: a finding a person already dismissed is recorded dismissed
again, crediting that decision (docs/domain-rules.md#dismissal-memory).

The rules are pure (reviews/domain/dismissal_memory.py); this module reads what they need in
one statement — the earlier rounds' findings of the review with the same fingerprints, and the
workspace's remembered dismissals (`MemoryFact`) on the round's files — and writes what they
decide through the node service's one status writer, auditing each finding it folds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Exists, OuterRef, Q, Subquery

from guardrails.audit import SYSTEM, Target, audit_record
from reviews.domain import types as t
from reviews.domain.dismissal_memory import (
    Candidate,
    Dismissal,
    MemoryKind,
    Occurrence,
    Remembered,
    fingerprint_holds_code,
    memory_note,
    memory_words,
    path_pattern,
    remember,
)
from reviews.domain.matching import SUBJECT, defect_classes
from reviews.domain.node_tags import MemoryTag
from reviews.models import MemoryFact, ReviewNode, ReviewRound, ReviewSpace
from reviews.selectors import node_view
from reviews.services.nodes import nodes_transition

#: What a fold writes besides the status: the decision it credits and its tag.
_FIELDS = ("decided_by", "decision_reason", "decided_at", "tags")


def _candidate(node: ReviewNode) -> Candidate:
    view = node_view(node, [])
    category = t.Category(node.category)
    return Candidate(
        id=str(node.pk),
        fingerprint=node.fingerprint,
        priority=t.Priority(node.priority),
        category=category,
        path=node.path or None,
        title=node.title,
        anchored=node.anchored,
        holds_code=fingerprint_holds_code(
            fingerprint_value=node.fingerprint,
            path=node.path or None,
            category=category,
            title=node.title,
        ),
        rule=view.analyzer_rule,
        classes=frozenset(c for c in defect_classes(view) if not c.startswith(SUBJECT)),
    )


def _dismissal(node: ReviewNode) -> Dismissal | None:
    if node.status != t.NodeStatus.DISMISSED or node.decided_at is None:
        return None
    view = node_view(node, [])
    return Dismissal(
        node_id=str(node.pk),
        fingerprint=node.fingerprint,
        path_pattern=path_pattern(node.path or None),
        priority=t.Priority(node.priority),
        category=t.Category(node.category),
        title=node.title,
        reason=node.decision_reason,
        decided_at=node.decided_at,
        by=node.decided_by_id,
        rule=view.analyzer_rule,
        classes=frozenset(c for c in defect_classes(view) if not c.startswith(SUBJECT)),
    )


def _occurrence(node: ReviewNode) -> Occurrence:
    """The node on its round, under its canonical finding's decision."""
    decided = node.duplicate_of if node.duplicate_of_id is not None else node
    assert decided is not None
    memory = decided.tags.memory
    return Occurrence(
        node_id=str(decided.pk),
        round=node.round.number,
        fingerprint=node.fingerprint,
        dismissed=decided.status == t.NodeStatus.DISMISSED and decided.decided_at is not None,
        by=decided.decided_by_id,
        reason=decided.decision_reason,
        decided_at=decided.decided_at,
        carried_from=memory.round
        if memory is not None and memory.kind is MemoryKind.CARRIED
        else None,
    )


def _remembered_rows(review_round: ReviewRound, candidates: list[ReviewNode]) -> list[ReviewNode]:
    """In one statement: the findings of the review's earlier rounds that share a fingerprint
    with a candidate, and the findings behind the suppression facts of the workspace and
    repository on the candidates' files (still dismissed), each marked `fact`."""
    space = ReviewSpace.objects.filter(pk=review_round.space_id)
    facts = MemoryFact.objects.filter(
        kind=MemoryFact.Kind.SUPPRESSION,
        workspace_id=Subquery(space.values("workspace_id")[:1]),
        repository_id=Subquery(space.values("pull_request__repository_id")[:1]),
        path_pattern__in=sorted({path_pattern(n.path or None) for n in candidates}),
    )
    fingerprints = sorted({n.fingerprint for n in candidates if n.fingerprint})
    return list(
        ReviewNode.objects.filter(
            Q(
                space_id=review_round.space_id,
                round__number__lt=review_round.number,
                fingerprint__in=fingerprints,
            )
            | Q(
                pk__in=facts.values("source_node_id"),
                status=t.NodeStatus.DISMISSED.value,
            )
        )
        .annotate(fact=Exists(facts.filter(source_node_id=OuterRef("pk"))))
        .select_related("round", "stream", "duplicate_of")
        .order_by("pk")
    )


def round_remember(*, review_round: ReviewRound, nodes: Iterable[ReviewNode]) -> list[ReviewNode]:
    """Record dismissed the round's canonical active findings that repeat a person's dismissal
    (carried from an earlier round of the review, or a pattern of the workspace), crediting
    that decision: who, why, when, and the tag that says where it comes from. Called by the
    lead pass with `nodes` (the round's, each with its stream) locked in its transaction;
    idempotent: a finding that ever had a memory tag is left alone, so one a person reopened
    stays open. The round's verdict is the caller's to decide. Returns the nodes folded."""
    candidates = [
        n
        for n in nodes
        if n.duplicate_of_id is None
        and n.status in t.ACTIVE_STATUSES
        and n.tags.memory is None
        and n.round_id == review_round.pk
    ]
    if not candidates:
        return []
    rows = _remembered_rows(review_round, candidates)
    earlier = [
        _occurrence(r)
        for r in rows
        if r.space_id == review_round.space_id and r.round.number < review_round.number
    ]
    dismissals = [d for r in rows if getattr(r, "fact", False) and (d := _dismissal(r))]
    folds: list[tuple[ReviewNode, Remembered]] = []
    for node in candidates:
        found = remember(_candidate(node), earlier, dismissals)
        if found is not None:
            folds.append((node, found))
    if not folds:
        return []
    for node, found in folds:
        assert found.decided_at is not None  # a remembered decision has its time
        node.decided_by_id = found.by
        node.decision_reason = found.reason
        node.decided_at = found.decided_at
        node.tags = node.tags.with_(
            memory=MemoryTag(
                kind=found.kind,
                nodes=[int(i) for i in found.nodes],
                round=found.round,
                decided_at=found.decided_at,
            )
        )
    before = {node.pk: node.status for node, _ in folds}
    moved = nodes_transition([(n, t.NodeStatus.DISMISSED) for n, _ in folds], also=_FIELDS)
    space = ReviewSpace.objects.select_related("workspace").get(pk=review_round.space_id)
    for node, found in folds:
        audit_record(
            action=f"node.dismissal_{found.kind.value}",
            actor=SYSTEM,
            workspace=space.workspace,
            target=Target("reviewnode", str(node.pk), f"{node.priority} {node.title}"),
            payload={
                "before": before[node.pk],
                "after": t.NodeStatus.DISMISSED.value,
                "reason": found.reason,
                "space": review_round.space_id,
                "round": review_round.number,
                "credited": found.by,
                "from_nodes": [int(i) for i in found.nodes],
                "from_round": found.round,
            },
        )
    return moved


def _standing(node: Any) -> MemoryTag | None:
    """The memory tag of a finding still dismissed under the decision it credits, else None
    (a person reopened or decided it since)."""
    memory: MemoryTag | None = node.tags.memory
    if (
        memory is None
        or node.status != t.NodeStatus.DISMISSED
        or node.decided_at is None
        or node.decided_at != memory.decided_at
    ):
        return None
    return memory


def remembered_words(node: Any) -> str:
    """Where a folded finding's decision comes from ("carried from round 2: …"), or ""."""
    memory = _standing(node)
    if memory is None:
        return ""
    return memory_words(memory.kind, round=memory.round, count=len(memory.nodes))


def remembered_note(node: Any, *, by: str) -> str:
    """A folded finding's "Previously dismissed by … because … (where from)", or ""."""
    words = remembered_words(node)
    return memory_note(by, node.decision_reason, words) if words else ""
