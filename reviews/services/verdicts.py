"""Axes and the verdict of a round (DESIGN.md §3.6, §3.7)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from reviews.domain import types as t
from reviews.domain.verdict import finalise
from reviews.events import emit
from reviews.models import AxisResult, ReviewNode, ReviewRound, Verdict
from reviews.selectors import node_view


def axis_record(
    *,
    review_round: ReviewRound,
    axis: t.AxisName,
    result: t.AxisResult,
    source: str,
    details: dict[str, Any] | None = None,
    evidence_url: str = "",
    submitted_by: Any = None,
) -> AxisResult:
    gated = axis.value in (review_round.space.workspace.gated_axes or [])
    row, _ = AxisResult.objects.update_or_create(
        round=review_round,
        axis=axis.value,
        defaults={
            "result": result.value,
            "source": source,
            "details": details or {},
            "evidence_url": evidence_url,
            "submitted_by": submitted_by,
            "gated": gated,
        },
    )
    emit(review_round.space_id, "review.axis_changed", axis=axis.value, result=result.value)
    return row


def round_finalise(*, review_round: ReviewRound) -> Verdict:
    """Decide Ship/Hold/Block from the nodes of EVERY stream of the round, then the axes."""
    with transaction.atomic():
        nodes = list(
            ReviewNode.objects.filter(round=review_round)
            .select_related("stream")
            .prefetch_related("confirmations")
        )
        views = [node_view(n, list(n.confirmations.all())) for n in nodes]
        axes = {
            t.AxisName(a.axis): t.AxisResult(a.result)
            for a in AxisResult.objects.filter(round=review_round)
        }
        gated = [t.AxisName(a) for a in review_round.space.workspace.gated_axes or []]
        decided = finalise(views, axes=axes, gated=gated)
        verdict, _ = Verdict.objects.update_or_create(
            round=review_round,
            defaults={
                "level": decided.level.value,
                "rule": decided.rule[:300],
                "confidence": decided.confidence,
                "contributing": list(decided.contributing),
            },
        )
        emit(review_round.space_id, "review.verdict", level=decided.level.value)
    return verdict
