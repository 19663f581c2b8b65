"""The completeness critic: coverage gaps, and at most one follow-up reviewer.

The rules (reviews/domain/panel.py) decide; with a model configured, one critic call judges
which dimensions the change needs and its answer joins the rules' warranted set
(reviews/pipeline/critic_runs.py). An abstention leaves the rules' set, and is recorded.
"""

from __future__ import annotations

from typing import Any

from reviews.domain import types as t
from reviews.domain.panel import CoverageGaps, coverage_gaps, warranted_dimensions
from reviews.models import ReviewerStream, ReviewRound
from reviews.pipeline import budget_runs, critic_runs, round_reads
from reviews.pipeline.stage_prepare import changed_files
from reviews.selectors import node_view
from reviews.services.axes import stream_dimension, stream_dimensions
from reviews.sources.diffs import ChangedFile


def critic(review_round: ReviewRound) -> None:
    # Model reviewers only: an analyzer checks its rules, it does not review a dimension.
    # One read: the first pass's reviewers, and a follow-up a crashed run of this stage named.
    models = [s for s in round_reads.streams(review_round) if s.kind == ReviewerStream.Kind.MODEL]
    streams = [s for s in models if not s.name.startswith("followup-")]
    facts = review_round.facts
    done = [s for s in streams if s.state == ReviewerStream.State.DONE]
    ran = {d for s in done for d in stream_dimensions(s, facts)}
    risks = review_round.stats.risk_list
    scheduled = {d for s in streams for d in stream_dimensions(s, facts)}
    # A process-blocked reviewer waits for a person, not for a follow-up reviewer.
    blocked = {stream_dimension(s) for s in streams if s.state == ReviewerStream.State.SKIPPED}

    def warranted_for(judged: frozenset[t.Dimension] | None = None) -> frozenset[t.Dimension]:
        return warranted_dimensions(
            scheduled=scheduled,
            process_blocked=blocked,
            high_risk=bool(risks),
            judged=judged,
            request_known=bool(review_round.original_request.strip()),
        )

    nodes = [node_view(n, []) for n in round_reads.nodes(review_round) if n.duplicate_of_id is None]
    files = changed_files(review_round)
    paths = [f.path for f in files]
    hot_spots = {r.where.split(":")[0] for r in risks}

    def gaps_for(warranted: frozenset[t.Dimension]) -> CoverageGaps:
        return coverage_gaps(
            warranted=warranted, ran=ran, changed_files=paths, nodes=nodes, hot_spots=hot_spots
        )

    warranted = warranted_for()
    gaps = gaps_for(warranted)
    model_configured = facts is not None and facts.model_configured
    judgement = (
        critic_runs.judge(
            review_round,
            critic_runs.critic_brief(
                review_round, ran=ran, warranted=warranted, gaps=gaps, changed_paths=paths
            ),
        )
        if model_configured
        else None
    )
    if judgement is not None and judgement.warranted is not None:
        warranted = warranted_for(judgement.warranted)
        gaps = gaps_for(warranted)
    follow_up = _follow_up(
        review_round, gaps.follow_up if model_configured else None, models=models, files=files
    )
    if facts is not None and follow_up is not None:
        review_round.facts = facts.model_copy(update={"followup": True})
    review_round.stats = review_round.stats.with_(
        critic=_critic_stats(gaps, follow_up, warranted, judgement)
    )
    round_reads.save_learned(review_round)


def _follow_up(
    review_round: ReviewRound,
    wanted: t.Dimension | None,
    *,
    models: list[ReviewerStream],
    files: list[ChangedFile],
) -> t.Dimension | None:
    """The follow-up reviewer the round gets, its stream made: the one a crashed run of this
    stage already named (never a second), else the one the gaps call for if the budgets pay."""
    already = next((s for s in models if s.name.startswith("followup-")), None)
    if already is not None:
        return stream_dimension(already)
    if wanted is None:
        return None
    if not budget_runs.plan_follow_up(review_round, wanted.value, files):
        return None  # the budgets cannot pay for it: the skip says so
    ReviewerStream.objects.get_or_create(
        round=review_round,
        name=f"followup-{wanted.value}",
        defaults={
            "agent": f"followup-{wanted.value}",
            "dimension": wanted.value,
            "kind": ReviewerStream.Kind.MODEL,
        },
    )
    round_reads.forget(review_round)  # a stream more than the shared read has
    return wanted


def _critic_stats(
    gaps: CoverageGaps,
    follow_up: t.Dimension | None,
    warranted: frozenset[t.Dimension],
    judgement: critic_runs.Judgement | None,
) -> dict[str, Any]:
    """What the round's stats keep of the critic: the gaps, the follow-up and the judgement."""
    judged = judgement.warranted if judgement is not None else None
    return {
        "missing_dimensions": [d.value for d in gaps.missing_dimensions],
        "uncited_files": list(gaps.uncited_files),
        "uncovered_hot_spots": list(gaps.uncovered_hot_spots),
        "follow_up": follow_up.value if follow_up else None,
        "warranted": sorted(d.value for d in warranted),
        "judged": sorted(d.value for d in judged) if judged is not None else None,
        "judged_gaps": list(judgement.gaps) if judgement is not None else [],
        "abstained": (judgement.abstained or None) if judgement is not None else None,
    }
