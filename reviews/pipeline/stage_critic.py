"""The completeness critic: coverage gaps, and at most one follow-up reviewer."""

from __future__ import annotations

from reviews.domain import types as t
from reviews.domain.panel import coverage_gaps
from reviews.models import ReviewerStream, ReviewNode, ReviewRound
from reviews.pipeline.stage_prepare import changed_files
from reviews.reporting import stream_dimension
from reviews.selectors import node_view


def critic(review_round: ReviewRound) -> None:
    streams = list(review_round.streams.exclude(kind=ReviewerStream.Kind.VERIFIER))
    ran = {stream_dimension(s) for s in streams if s.state == ReviewerStream.State.DONE}
    # A process-blocked reviewer waits for a person, not for a follow-up reviewer.
    warranted = {stream_dimension(s) for s in streams if s.state != ReviewerStream.State.SKIPPED}
    risks = review_round.stats.risk_list
    if risks:
        warranted.add(t.Dimension.SECURITY)
    nodes = [
        node_view(n, [])
        for n in ReviewNode.objects.filter(
            round=review_round, duplicate_of__isnull=True
        ).select_related("stream")
    ]
    gaps = coverage_gaps(
        warranted=warranted,
        ran=ran,
        changed_files=[f.path for f in changed_files(review_round)],
        nodes=nodes,
        hot_spots={r.where.split(":")[0] for r in risks},
    )
    facts = review_round.facts
    follow_up = gaps.follow_up if facts is not None and facts.model_configured else None
    already = review_round.streams.filter(name__startswith="followup-").exists()
    if follow_up is not None and not already:
        ReviewerStream.objects.get_or_create(
            round=review_round,
            name=f"followup-{follow_up.value}",
            defaults={
                "agent": f"followup-{follow_up.value}",
                "dimension": follow_up.value,
                "kind": ReviewerStream.Kind.MODEL,
            },
        )
        assert facts is not None  # a follow-up needs a model, a fact the prepare stage set
        review_round.facts = facts.model_copy(update={"followup": True})
    review_round.stats = review_round.stats.with_(
        critic={
            "missing_dimensions": [d.value for d in gaps.missing_dimensions],
            "uncited_files": list(gaps.uncited_files),
            "uncovered_hot_spots": list(gaps.uncovered_hot_spots),
            "follow_up": follow_up.value if follow_up else None,
        },
    )
    review_round.save(update_fields=["facts", "stats"])
