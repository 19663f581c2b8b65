"""What each stage of pr_review does. Inline stages run in the coordinator; fan-out stages
create PipelineStep rows whose runners execute in their own tasks (reviews/pipeline/runner.py).
Every handler is idempotent: a coordinator or step re-run after a crash does no harm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import Exists, OuterRef

from reviews.domain.panel import PanelMode, conflicting_severity, plan_panel
from reviews.domain.stream_states import StreamState
from reviews.models import PipelineStep, ReviewerStream, ReviewNode, ReviewRound
from reviews.pipeline import budget_runs, reviewer_runs, round_reads
from reviews.pipeline.lead_runs import lead_walkthrough
from reviews.pipeline.model_runs import ReviewerReads, SpendBatch
from reviews.pipeline.stage_critic import critic
from reviews.pipeline.stage_finalise import finalise
from reviews.pipeline.stage_prepare import changed_files, prepare
from reviews.selectors import node_view
from reviews.services.axes import token_axes_record
from reviews.services.consolidation import round_consolidate, round_route_notes, walkthrough
from reviews.services.rounds import round_transition
from reviews.services.streams import stream_transition

__all__ = ["changed_files", "token_axes_record"]


def round_fail(review_round: ReviewRound, message: str) -> None:

    # Only an open round fails: a superseded or cancelled one keeps the state that ended it
    # (round_transition tells the page).
    round_transition(review_round, ReviewRound.State.FAILED, error=message)


# -- reviewers (fan-out) -----------------------------------------------------------------------


def _steps_create(
    review_round: ReviewRound, stage: str, wanted: dict[str, dict[str, Any]]
) -> list[PipelineStep]:
    """The steps of `wanted` (key → the step's unit), in one statement that creates the ones
    the stage does not have yet and leaves the others as they are (a step's key is unique in
    its stage); returns them all, each with its id. A step a re-run coordinator created before
    is dispatched again: harmless, a claim takes a step once. The round's lease makes this
    coordinator the only one creating its steps."""
    return PipelineStep.objects.bulk_create(
        [
            PipelineStep(round=review_round, stage=stage, key=key, **unit)
            for key, unit in wanted.items()
        ],
        update_conflicts=True,
        unique_fields=["round", "stage", "key"],
        update_fields=["key"],  # the same: the row stays as it is
    )


def _steps_for_streams(review_round: ReviewRound, stage: str, streams) -> list[PipelineStep]:
    """A step for each of `streams` (a queryset) the stage has none for yet: the streams and
    whether each has its step are read in one query, the steps created in one insert."""
    has_step = PipelineStep.objects.filter(round=review_round, stage=stage, key=OuterRef("name"))
    return PipelineStep.objects.bulk_create(
        [
            PipelineStep(round=review_round, stage=stage, key=s.name, stream=s)
            for s in streams.exclude(Exists(has_step))
        ]
    )


def create_reviewer_steps(review_round: ReviewRound) -> list[PipelineStep]:
    prepared = round_reads.prepared(review_round)
    if prepared is not None:
        # The streams prepare just wrote, with their ids: not read again.
        return _steps_create(review_round, "reviewers", {s.name: {"stream": s} for s in prepared})
    return _steps_for_streams(
        review_round, "reviewers", review_round.streams.exclude(kind=ReviewerStream.Kind.VERIFIER)
    )


def run_reviewer_step(step: PipelineStep, reads: ReviewerReads | None = None) -> dict[str, Any]:
    if step.stream is None:
        raise ValueError(f"reviewer step {step.pk} has no stream")
    # The step was read with its stream and its round (and the round's space, workspace and
    # repository) the moment it was claimed: the stream's run needs no second read.
    stream = step.stream
    stream.round = step.round
    return reviewer_runs.run_stream(stream, fresh=True, reads=reads)


def start_claimed(steps: Sequence[PipelineStep]) -> dict[int, ReviewerReads]:
    """For reviewer steps claimed together, by step, what is done once for all of them rather
    than by each (a statement or two apiece): their streams moved to running with an attempt
    counted, in one statement (each counted from the row it was claimed with, as its runner
    would), and the model reviewers' settings and memory hints read once per round;
    their spend is collected for the caller to record together (`ReviewerReads.spend`)."""
    streams = [
        s.stream
        for s in steps
        if s.stage in REVIEWER_STAGES
        and s.stream is not None
        and s.stream.state != ReviewerStream.State.DONE  # its runner only says so
        # A step of a round that ended is failed by its runner without a start.
        and s.round.state in (ReviewRound.State.PENDING, ReviewRound.State.RUNNING)
    ]
    if len(streams) < 2:
        return {}  # one reviewer starts itself and reads its own: no more than shared
    rounds = {s.round_id: s.round for s in steps}
    for stream in streams:
        stream.round = rounds[stream.round_id]
    # Each stream's attempts counted from what it was claimed with: nothing read back.
    stream_transition(streams, StreamState.RUNNING, count_attempt=True)
    started = frozenset(s.pk for s in streams if s.state == ReviewerStream.State.RUNNING)
    reads: dict[int, ReviewerReads] = {}
    spend = SpendBatch()  # the caller records it once they have run (runner.run_inline)
    for round_id in rounds:
        models = [
            s for s in streams if s.round_id == round_id and s.kind == ReviewerStream.Kind.MODEL
        ]
        configs, memory = ReviewerReads.settings_of(models[0]) if len(models) > 1 else (None, None)
        reads[round_id] = ReviewerReads(started, configs, memory, spend)
    return {s.pk: reads[s.round_id] for s in steps if s.round_id in reads}


# -- consolidate ----------------------------------------------------------------------------


def consolidate(
    review_round: ReviewRound, *, lead: Callable[[ReviewRound], Any] | None = lead_walkthrough
) -> None:
    read: list[ReviewNode] = []
    summary = round_consolidate(review_round=review_round, nodes_out=read)
    # What the lead pass just read and wrote, for its notes and tour and the panel's planning.
    round_reads.keep_nodes(review_round, read, confirmations=True)
    counts = {
        s.name: {"accepted": s.accepted, "rejected": s.rejected} for s in review_round.streams.all()
    }
    review_round.stats = review_round.stats.with_(
        consolidation=summary,
        streams=counts,
        cross_notes=round_route_notes(review_round=review_round, nodes=read),
        **(
            {}  # the follow-up pass keeps the lead's tour
            if lead is None and review_round.stats.walkthrough_steps
            else walkthrough(review_round=review_round, lead=lead, nodes=read)
        ),
    )
    round_reads.save_learned(review_round)


def followup_consolidate(review_round: ReviewRound) -> None:
    """The same lead pass as the first, now over the follow-up reviewer's findings too. The
    lead's tour is of the change, not of the findings: this pass keeps it."""
    consolidate(review_round, lead=None)


# -- verification panel (fan-out) ------------------------------------------------------------


def create_panel_steps(review_round: ReviewRound) -> list[PipelineStep]:
    return _panel_steps(review_round, "panel")


def create_followup_panel_steps(review_round: ReviewRound) -> list[PipelineStep]:
    """The follow-up reviewer's findings, after the second lead pass, meet the same panel;
    what the first panel verified or let pass is not planned again."""
    return _panel_steps(review_round, "followup_panel")


def _panel_steps(review_round: ReviewRound, stage: str) -> list[PipelineStep]:
    nodes = round_reads.nodes(review_round, confirmations=True)
    views = [node_view(n, list(n.confirmations.all())) for n in nodes]
    facts = review_round.facts
    mode = PanelMode(facts.panel_mode if facts else review_round.space.workspace.panel_mode)
    plan = plan_panel(
        views,
        mode=mode,
        conflicting_severity=conflicting_severity(views),
        settled={str(n.pk) for n in nodes if n.tags.panel is not None or n.tags.unverified},
    )
    plan = budget_runs.panel_within_budget(review_round, stage, plan, nodes)  # token budgets
    by_id = {str(n.pk): n for n in nodes}
    unverified = [by_id[node_id] for node_id in plan.unverified]
    for node in unverified:
        node.tags = node.tags.with_(unverified=True)
    ReviewNode.objects.bulk_update(unverified, ["tags"])
    # Narrowed once is narrowed for the round: the follow-up pass counts every finding again.
    narrowed = plan.narrowed or bool(review_round.stats.panel_narrowed)
    groups = plan.groups()
    review_round.stats = review_round.stats.with_(
        panel_narrowed=narrowed,
        panel_groups={**(review_round.stats.panel_groups or {}), stage: len(groups)},
    )
    # With the budget's plan: written by the statement that enters the stage.
    round_reads.save_learned(review_round)
    # One step per group of findings (reviews/domain/panel.py PANEL_GROUP_SIZE): each lens
    # judges a group in one call. A group's key names its first finding, so a re-run
    # coordinator that plans the same groups creates none twice.
    by_rule = set(plan.rule_reachable)
    return _steps_create(
        review_round,
        stage,
        {
            f"group-{group[0]}": {
                "node": by_id[group[0]],
                "nodes": [int(node_id) for node_id in group],
                "rule_reachable": [int(node_id) for node_id in group if node_id in by_rule],
            }
            for group in groups
        },
    )


def run_panel_step(step: PipelineStep, reads: ReviewerReads | None = None) -> dict[str, Any]:
    ids = step.nodes or ([step.node_id] if step.node_id is not None else [])
    if not ids:
        raise ValueError(f"panel step {step.pk} has no node")
    nodes = list(ReviewNode.objects.filter(pk__in=ids).select_related("stream").order_by("pk"))
    for node in nodes:
        node.round = step.round  # read with the step
    return reviewer_runs.verify_group(nodes, step.round, rule_reachable=set(step.rule_reachable))


# -- follow-up ---------------------------------------------------------------------------------


def create_followup_steps(review_round: ReviewRound) -> list[PipelineStep]:
    return _steps_for_streams(
        review_round, "followup", review_round.streams.filter(name__startswith="followup-")
    )


INLINE = {
    "prepare": prepare,
    "consolidate": consolidate,
    "critic": critic,
    "followup_consolidate": followup_consolidate,
    "finalise": finalise,
}
FANOUT = {
    "reviewers": create_reviewer_steps,
    "panel": create_panel_steps,
    "followup": create_followup_steps,
    "followup_panel": create_followup_panel_steps,
}
REVIEWER_STAGES = ("reviewers", "followup")
#: A step's runner: the step, read when claimed, and what was read once for its batch.
STEP_RUNNERS: dict[str, Callable[[PipelineStep, ReviewerReads | None], dict[str, Any]]] = {
    "reviewers": run_reviewer_step,
    "followup": run_reviewer_step,
    "panel": run_panel_step,
    "followup_panel": run_panel_step,
}
