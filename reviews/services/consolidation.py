"""The lead pass: it edits the findings, it never writes a second copy."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from reviews.domain.dedup import consolidate
from reviews.domain.round_stats import TourStep
from reviews.models import ReviewNode, ReviewRound
from reviews.selectors import node_view
from reviews.services.memory import round_remember


def round_consolidate(
    *, review_round: ReviewRound, nodes_out: list[ReviewNode] | None = None
) -> dict[str, int]:
    """Merge duplicates into canonical nodes crediting every reviewer; tag co-located,
    cross-referenced and conflicting findings; apply severity floors; record dismissed the
    findings a person already dismissed (dismissal memory, reviews/services/memory.py).
    Idempotent.

    Every node of the round takes part, whatever stream recorded it — model reviewers,
    analyzers, the follow-up reviewer, CI — so it runs again before the verdict. `nodes_out`
    receives the nodes as written (each with its stream and confirmations), for a caller that
    reads them next."""
    with transaction.atomic():
        nodes = {
            str(n.pk): n
            for n in ReviewNode.objects.filter(round=review_round)
            .select_related("stream")
            .prefetch_related("confirmations")
            .select_for_update(of=("self",))
        }
        result = consolidate(node_view(n, list(n.confirmations.all())) for n in nodes.values())
        links: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for label, pairs in (
            ("co_located", result.co_located),
            ("cross_referenced", result.cross_referenced),
            ("conflicting", result.conflicting_fixes),
        ):
            for a, b in pairs:
                links[a][label].append(int(b))
                links[b][label].append(int(a))
        demoted = 0
        changed: list[ReviewNode] = []
        fields: list[str] = []
        for view in result.nodes:
            node = nodes[view.id]
            tags = node.tags.without("co_located", "cross_referenced", "conflicting").with_(
                **{k: sorted(v) for k, v in links[view.id].items()}
            )
            if view.defect_classes is not None:
                tags = tags.with_(defect_classes=list(view.defect_classes))
            duplicate_of = int(view.duplicate_of) if view.duplicate_of else None
            changes = {
                "duplicate_of_id": duplicate_of,
                # Other reviewers credited for the same defect (the author is the stream's).
                "credited_agents": list(view.credited_agents),
                "priority": view.priority.value,
                "severity": view.severity.value,
                "body": view.body,
                "replacement_lines": list(view.replacement_lines)
                if view.replacement_lines is not None
                else None,
                "fix_diff": view.diff or "",
                "fix_prompt": view.fix_prompt or "",
                "tags": tags,
            }
            if any(getattr(node, f) != v for f, v in changes.items()):
                for field, value in changes.items():
                    setattr(node, field, value)
                changed.append(node)
                fields = [f.removesuffix("_id") for f in changes]
            demoted += duplicate_of is not None
        if changed:
            # One statement for the whole round, not one per node. bulk_update skips auto_now.
            now = timezone.now()
            for node in changed:
                node.updated_at = now
            ReviewNode.objects.bulk_update(changed, [*fields, "updated_at"])
        # A finding a person already dismissed is recorded dismissed again, crediting them.
        round_remember(review_round=review_round, nodes=nodes.values())
    if nodes_out is not None:
        nodes_out.extend(nodes.values())
    return {
        "demoted_duplicates": demoted,
        "co_located": len(result.co_located),
        "cross_referenced": len(result.cross_referenced),
        "conflicting": len(result.conflicting_fixes),
    }


def round_route_notes(
    *, review_round: ReviewRound, nodes: Iterable[ReviewNode] | None = None
) -> dict[str, list[dict]]:
    """Cross-reviewer notes grouped by the dimension they concern: routed, not dropped.
    `nodes`: the round's, each with its stream, when the caller has read them."""
    routed: dict[str, list[dict]] = defaultdict(list)
    if nodes is None:
        nodes = (
            ReviewNode.objects.filter(round=review_round)
            .select_related("stream")
            .only("pk", "tags", "stream__agent")
        )
    for node in nodes:
        for note in node.tags.cross_notes or []:
            routed[note.dimension.value].append(
                {"from": node.stream.agent, "node": node.pk, "note": note.note}
            )
    return dict(routed)


def walkthrough(
    *,
    review_round: ReviewRound,
    lead: Callable[[ReviewRound], list[TourStep] | None] | None = None,
    nodes: Iterable[ReviewNode] | None = None,
) -> dict[str, Any]:
    """The round's walkthrough, as the stats keys to write. `lead` is the lead model's tour
    (reviews/pipeline/lead_runs.py), told the cohorts and the change, never the findings; when
    there is none, the deterministic tour: cohorts in reading order and how many findings each
    has. It edits nothing and restates no finding. `nodes`: the round's, when the caller has
    read them."""
    steps = lead(review_round) if lead is not None else None
    if steps:
        return {"walkthrough_steps": steps}
    cohorts = review_round.stats.cohort_list
    counts: dict[str, int] = defaultdict(int)
    paths = (
        [n.path for n in nodes if n.duplicate_of_id is None]
        if nodes is not None
        else ReviewNode.objects.filter(round=review_round, duplicate_of__isnull=True).values_list(
            "path", flat=True
        )
    )
    for path in paths:
        counts[path or ""] += 1
    lines = []
    for i, cohort in enumerate(cohorts, start=1):
        paths = cohort.paths
        found = sum(counts.get(p, 0) for p in paths)
        lines.append(
            f"{i}. {', '.join(paths[:4])}{'…' if len(paths) > 4 else ''} — {found} finding(s)"
        )
    unanchored = counts.get("", 0)
    if unanchored:
        lines.append(f"Plus {unanchored} finding(s) about the change as a whole.")
    return {"walkthrough": "\n".join(lines)}
