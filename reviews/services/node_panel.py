"""The verification panel's lenses applied to a group of findings.

Apart from the person's decisions (reviews/services/nodes.py) because the panel is the
pipeline's step: it records every lens's answer, tags each finding with the panel's outcome
and moves the status of the ones it confirms or filters, a group at a time in a fixed number
of statements, through the one status writer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from reviews.domain import consensus
from reviews.domain.panel import LensVerdict, PanelOutcome, PanelStatus, panel_outcome
from reviews.domain.types import NodeStatus
from reviews.models import NodeConfirmation, ReviewNode, Verdict
from reviews.selectors import node_view
from reviews.services.nodes import node_follow, nodes_transition

#: What a lens the node was not put to answers.
_NO_VERDICT: tuple[Any, Any, str] = (None, None, "")

#: The fields the panel changes on a node, saved with its status or without.
_PANEL_FIELDS = ["tags", "priority", "severity", "type", "updated_at"]

Lenses = Mapping[str, tuple[Any, Any, str]]


def node_panel_apply(
    *, nodes: Sequence[ReviewNode], answers: Mapping[int, Lenses]
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
        locked = _lock_group(nodes)
        rows: list[NodeConfirmation] = []
        moves: list[tuple[ReviewNode, NodeStatus]] = []
        for node in locked:
            lenses = answers[node.pk]
            confirmations = list(node.confirmations.all())
            outcome = _outcome(node, lenses, confirmations)
            outcomes[node.pk] = outcome
            node_rows, confirmed_by = _lens_rows(node, lenses)
            # A lens that already answered (a re-run step) keeps its first row.
            held = {(c.agent, c.lens) for c in confirmations}
            rows += [r for r in node_rows if (r.agent, r.lens) not in held]
            _take_outcome(node, outcome, lenses)
            if (status := _panel_status(node, outcome, confirmed_by)) is not None:
                moves.append((node, status))
        NodeConfirmation.objects.bulk_create(rows)
        _save_group(locked, moves)
    return outcomes


def _lock_group(nodes: Sequence[ReviewNode]) -> list[ReviewNode]:
    """The group's rows locked, with their stream, confirmations and whether their round has
    a verdict; each keeps the caller's round when the caller read it (the verdict's follow-up
    reads it)."""
    locked: list[ReviewNode] = list(
        ReviewNode.objects.select_for_update(of=("self",))
        .select_related("stream")
        .prefetch_related("confirmations")
        .filter(pk__in=[n.pk for n in nodes])
        .annotate(decided=Exists(Verdict.objects.filter(round=OuterRef("round_id"))))
        .order_by("pk")
    )
    given = {n.pk: n for n in nodes}
    for node in locked:
        caller = given[node.pk]
        if ReviewNode.round.is_cached(caller):
            node.round = caller.round
    return locked


def _outcome(
    node: ReviewNode, lenses: Lenses, confirmations: list[NodeConfirmation]
) -> PanelOutcome:
    """The survival rule on the lenses' answers (reviews/domain/panel.py)."""
    rule = None
    if "reachability" not in lenses and node.tags.analyzer is not None:
        rule = node.tags.analyzer.rule
    return panel_outcome(
        node_view(node, confirmations),
        reachability=lenses.get("reachability", _NO_VERDICT)[0],
        false_positive=lenses.get("false_positive", _NO_VERDICT)[0],
        severity_vote=lenses.get("severity", _NO_VERDICT)[1],
        abstentions={
            lens: reason
            for lens, (verdict, _, reason) in lenses.items()
            if lens != "severity" and verdict is None
        },
        rule=rule,
    )


def _lens_rows(node: ReviewNode, lenses: Lenses) -> tuple[list[NodeConfirmation], str | None]:
    """A confirmation row per lens that answered, and the first lens that said REAL (it
    confirms the node as a peer), if any."""
    rows: list[NodeConfirmation] = []
    confirmed_by = None
    for lens in ("reachability", "false_positive"):
        verdict, _, reason = lenses.get(lens, _NO_VERDICT)
        if verdict is None:
            continue
        rows.append(
            NodeConfirmation(
                node=node, agent=f"lens-{lens}", lens=lens, verdict=verdict.value, reason=reason
            )
        )
        if verdict is LensVerdict.REAL and confirmed_by is None:
            confirmed_by = f"lens-{lens}"
    _, severity_vote, severity_reason = lenses.get("severity", _NO_VERDICT)
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
    return rows, confirmed_by


def _take_outcome(node: ReviewNode, outcome: PanelOutcome, lenses: Lenses) -> None:
    """The panel's tags on the node and, confirmed, the priority, severity and type it gave."""
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


def _panel_status(
    node: ReviewNode, outcome: PanelOutcome, confirmed_by: str | None
) -> NodeStatus | None:
    """The status the panel moves the node to: confirmed by a lens, or dismissed when
    filtered; None to leave it."""
    if confirmed_by is not None and node.status == NodeStatus.OPEN:
        return consensus.confirm(
            status=NodeStatus(node.status),
            author_agent=node.stream.agent,
            by=consensus.Actor.agent(confirmed_by),
        )
    if outcome.status is PanelStatus.FILTERED and (
        NodeStatus.DISMISSED in consensus.ALLOWED_TRANSITIONS[NodeStatus(node.status)]
    ):
        # A finding a person closed meanwhile keeps their decision; one bad node must not
        # fail its whole group either.
        return NodeStatus.DISMISSED
    return None


def _save_group(
    locked: Sequence[ReviewNode], moves: Sequence[tuple[ReviewNode, NodeStatus]]
) -> None:
    """The moved nodes in one statement, the others in one, and one verdict follow-up."""
    moved = nodes_transition(moves, also=_PANEL_FIELDS)
    unmoved = [n for n in locked if n not in moved]
    now = timezone.now()
    for node in unmoved:
        node.updated_at = now
    if unmoved:
        ReviewNode.objects.bulk_update(unmoved, _PANEL_FIELDS)
    if moved:
        # One follow-up for the group: the verdict is decided from every node at once.
        node_follow(
            moved[0],
            f"verification panel on {len(locked)} finding(s)",
            decided=getattr(moved[0], "decided", None),  # read with the lock
        )
