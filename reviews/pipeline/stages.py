"""What each stage of pr_review does. Inline stages run in the coordinator; fan-out stages
create PipelineStep rows whose runners execute in their own tasks (reviews/pipeline/runner.py).
Every handler is idempotent: a coordinator or step re-run after a crash does no harm.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from django.db import transaction

from reviews.agents.redaction import redact_diff
from reviews.changed_files import file_summaries
from reviews.domain import types as t
from reviews.domain.axes import AnalyzerRun, deterministic_axes, token_axes_detailed
from reviews.domain.classification import ChangeStatus, FileChange, classify_change
from reviews.domain.panel import PanelMode, coverage_gaps, plan_panel
from reviews.domain.round_stats import PanelModeName, PanelOutcome, RoundFacts
from reviews.domain.selection import select_reviewers
from reviews.models import PipelineStep, ReviewerStream, ReviewNode, ReviewRound
from reviews.pipeline import inputs, reviewer_runs
from reviews.pipeline.template import reviewers_for
from reviews.reporting import stream_dimension
from reviews.selectors import node_view
from reviews.services import codeindex
from reviews.services.consolidation import round_consolidate, round_route_notes, walkthrough
from reviews.services.flags import space_flag_check
from reviews.services.spaces import space_status_refresh
from reviews.services.verdicts import axis_record, round_finalise
from reviews.sources.diffs import ChangedFile, parse_unified_diff
from workspaces.models import workspace_model_configured

log = logging.getLogger(__name__)

_STATUS = {
    "added": ChangeStatus.ADDED,
    "deleted": ChangeStatus.DELETED,
    "renamed": ChangeStatus.RENAMED,
    "binary": ChangeStatus.MODIFIED,
}


def changed_files(review_round: ReviewRound) -> list[ChangedFile]:
    return parse_unified_diff(review_round.diff)


def _file_changes(files: list[ChangedFile]) -> list[FileChange]:
    return [
        FileChange(
            path=f.path,
            added=f.additions,
            removed=f.deletions,
            status=_STATUS.get(str(f.status), ChangeStatus.MODIFIED),
            old_path=f.old_path,
        )
        for f in files
    ]


def round_fail(review_round: ReviewRound, message: str) -> None:
    from reviews.services.rounds import round_transition

    # Only an open round fails: a superseded or cancelled one keeps the state that ended it
    # (round_transition tells the page).
    round_transition(review_round, ReviewRound.State.FAILED, error=message)


# -- prepare ---------------------------------------------------------------------------------


def prepare(review_round: ReviewRound) -> None:
    space = review_round.space
    space_status_refresh(space=space.pk)
    if not review_round.diff:
        # Stored, shown (cohort previews) and exported: a committed secret stops here. The
        # analyzers read the checkout, so the secret scanner still sees what was committed.
        review_round.diff = redact_diff(inputs.fetch_diff(review_round))
        review_round.save(update_fields=["diff"])
    files = changed_files(review_round)
    classification = classify_change(_file_changes(files), review_round.diff)
    model_ready = workspace_model_configured(space.workspace)
    facts = RoundFacts(
        tier=review_round.tier,
        fast_exit=classification.fast_exit is not None,
        model_configured=model_ready,
        python_changed=any(
            f.path.endswith(".py") and not f.is_binary and f.new_path for f in files
        ),
        panel_mode=cast(PanelModeName, space.workspace.panel_mode),
        followup=False,
    )
    if review_round.tier == t.Tier.ADAPTIVE:
        selection = select_reviewers(classification)
        facts.selected = [
            (_reviewer_key(spec), spec.dimension.value) for spec in selection.reviewers
        ]
        facts.selection_rationale = list(selection.rationale)
    entries = [] if facts.fast_exit else reviewers_for(facts.for_gates())
    review_round.facts = facts
    review_round.stats = review_round.stats.with_(
        classification={
            "fast_exit": classification.fast_exit,
            "size": classification.size,
            "files": classification.file_count,
            "changed_lines": classification.changed_lines,
            "risks": [{"pattern": r.pattern, "where": r.where} for r in classification.risks],
        },
        reviewers=[e.key for e in entries],
        files=file_summaries(files),
        not_covered_by_model=[]
        if model_ready
        else ["no model configured: only offline analyzers ran"],
    )
    review_round.save(update_fields=["facts", "stats"])
    if not facts.fast_exit:
        worktree = inputs.round_worktree_ready(review_round)
        cohorts = codeindex.round_cohorts(review_round, worktree)
        review_round.stats = review_round.stats.with_(cohorts=codeindex.cohorts_json(cohorts))
        review_round.save(update_fields=["stats"])
    for entry in entries:
        ReviewerStream.objects.get_or_create(
            round=review_round,
            name=entry.key,
            defaults={
                "agent": entry.key,
                "dimension": entry.dimension,
                "kind": ReviewerStream.Kind.ANALYZER
                if entry.key in reviewer_runs.ANALYZERS
                else ReviewerStream.Kind.MODEL,
            },
        )


def _reviewer_key(spec: t.ReviewerSpec) -> str:
    # The combined trivial-change reviewer is the quality reviewer with the requirements check.
    return spec.dimension.value


# -- reviewers (fan-out) -----------------------------------------------------------------------


def _steps_for_streams(review_round: ReviewRound, stage: str, streams) -> list[PipelineStep]:
    created = []
    for stream in streams:
        step, new = PipelineStep.objects.get_or_create(
            round=review_round, stage=stage, key=stream.name, defaults={"stream": stream}
        )
        if new:
            created.append(step)
    return created


def create_reviewer_steps(review_round: ReviewRound) -> list[PipelineStep]:
    return _steps_for_streams(
        review_round, "reviewers", review_round.streams.exclude(kind=ReviewerStream.Kind.VERIFIER)
    )


def run_reviewer_step(step: PipelineStep) -> dict[str, Any]:
    if step.stream is None:
        raise ValueError(f"reviewer step {step.pk} has no stream")
    return reviewer_runs.run_stream(step.stream)


# -- consolidate ----------------------------------------------------------------------------


def consolidate(review_round: ReviewRound) -> None:
    summary = round_consolidate(review_round=review_round)
    counts = {
        s.name: {"accepted": s.accepted, "rejected": s.rejected} for s in review_round.streams.all()
    }
    review_round.stats = review_round.stats.with_(
        consolidation=summary,
        streams=counts,
        cross_notes=round_route_notes(review_round=review_round),
        walkthrough=walkthrough(review_round=review_round),
    )
    review_round.save(update_fields=["stats"])


# -- verification panel (fan-out) ------------------------------------------------------------


def create_panel_steps(review_round: ReviewRound) -> list[PipelineStep]:
    nodes = list(
        ReviewNode.objects.filter(round=review_round)
        .select_related("stream")
        .prefetch_related("confirmations")
    )
    views = [node_view(n, list(n.confirmations.all())) for n in nodes]
    plan = plan_panel(views, mode=PanelMode(review_round.space.workspace.panel_mode))
    by_id = {str(n.pk): n for n in nodes}
    for node_id in plan.unverified:
        node = by_id[node_id]
        node.tags = node.tags.with_(unverified=True)
        node.save(update_fields=["tags"])
    review_round.stats = review_round.stats.with_(panel_narrowed=plan.narrowed)
    review_round.save(update_fields=["stats"])
    created = []
    for node_id in plan.verify:
        step, new = PipelineStep.objects.get_or_create(
            round=review_round,
            stage="panel",
            key=f"node-{node_id}",
            defaults={"node": by_id[node_id]},
        )
        if new:
            created.append(step)
    return created


def run_panel_step(step: PipelineStep) -> dict[str, Any]:
    if step.node is None:
        raise ValueError(f"panel step {step.pk} has no node")
    return reviewer_runs.verify_node(step.node, step.round)


# -- critic and follow-up --------------------------------------------------------------------


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


def create_followup_steps(review_round: ReviewRound) -> list[PipelineStep]:
    return _steps_for_streams(
        review_round, "followup", review_round.streams.filter(name__startswith="followup-")
    )


# -- finalise ---------------------------------------------------------------------------------


def analyzer_runs(streams: list[ReviewerStream]) -> list[AnalyzerRun]:
    """Analyzer streams that finished, with the files they checked (their coverage note)."""
    runs = []
    for stream in streams:
        analyzer = reviewer_runs.ANALYZERS.get(stream.agent)
        if (
            stream.kind != ReviewerStream.Kind.ANALYZER
            or stream.state != ReviewerStream.State.DONE
            or analyzer is None
        ):
            continue
        note: dict[str, Any] = next(
            (n for n in stream.notes or [] if n.get("kind") == "coverage"), {}
        )
        runs.append(
            AnalyzerRun(
                tool=stream.agent,
                axes=analyzer.axes,
                files=tuple(note.get("files") or ()),
                scope=note.get("scope", ""),
            )
        )
    return runs


def token_axes_record(
    review_round: ReviewRound,
    *,
    streams: list[ReviewerStream] | None = None,
    nodes: list | None = None,
) -> None:
    """The token axes from what the reviewers and analyzers covered and the findings still
    active. Run at the end of the pipeline and again after every decision, so a dismissed
    finding stops failing its axis; a result submitted from CI is never overwritten."""
    if streams is None:
        streams = list(review_round.streams.exclude(kind=ReviewerStream.Kind.VERIFIER))
    if nodes is None:
        nodes = [
            node_view(n, [])
            for n in ReviewNode.objects.filter(round=review_round).select_related("stream")
        ]
    # A token axis passes only when a reviewer of its dimension said what it covered.
    coverage = {
        stream_dimension(s): (s.coverage_note or None)
        for s in streams
        if s.state == ReviewerStream.State.DONE and s.kind == ReviewerStream.Kind.MODEL
    }
    # An analyzer that ran over changed files is explicit coverage for its axes.
    axes = token_axes_detailed(coverage=coverage, nodes=nodes, analyzers=analyzer_runs(streams))
    submitted = set(review_round.axes.exclude(source="tokens").values_list("axis", flat=True))
    for axis, (result, details) in axes.items():
        if axis is t.AxisName.TEST_GAP or axis.value in submitted:
            continue  # testGap comes from the cohorts; a CI submission stands
        axis_record(
            review_round=review_round, axis=axis, result=result, source="tokens", details=details
        )


def finalise(review_round: ReviewRound) -> None:
    facts = review_round.facts
    fast_exit = facts is not None and facts.fast_exit
    if facts is not None and facts.followup:
        # The follow-up reviewer's findings are merged with the others' as well.
        summary = round_consolidate(review_round=review_round)
        review_round.stats = review_round.stats.with_(consolidation=summary)
        review_round.save(update_fields=["stats"])
    streams = list(review_round.streams.exclude(kind=ReviewerStream.Kind.VERIFIER))
    nodes = [
        node_view(n, [])
        for n in ReviewNode.objects.filter(round=review_round).select_related("stream")
    ]
    if fast_exit:
        review_round.stats = review_round.stats.with_(
            fast_exit_note="Docs-only or formatting-only change: approved with no reviewer."
        )
    else:
        token_axes_record(review_round, streams=streams, nodes=nodes)
        worktree = inputs.round_worktree_ready(review_round)
        result, details = codeindex.test_gap(codeindex.round_cohorts(review_round, worktree), nodes)
        axis_record(
            review_round=review_round,
            axis=t.AxisName.TEST_GAP,
            result=result,
            source="cohorts",
            details=details,
        )
    submitted = review_round.axes.filter(source="submitted").values_list("axis", flat=True)
    for axis, result, details in deterministic_axes(submitted=set(submitted), fast_exit=fast_exit):
        if axis is t.AxisName.API_CONTRACT and not fast_exit:
            result, details = codeindex.api_contract(review_round)
        axis_record(
            review_round=review_round,
            axis=axis,
            result=result,
            source="deterministic",
            details=details,
        )
    model_nodes = [
        n
        for n in nodes
        if n.stream in {s.name for s in streams if s.kind == ReviewerStream.Kind.MODEL}
    ]
    review_round.stats = review_round.stats.with_(
        # The share of model findings that cite the shared change map.
        context_utilization=round(sum(1 for n in model_nodes if n.map_anchor) / len(model_nodes), 3)
        if model_nodes
        else None,
        tokens={
            "in": sum(s.tokens_in for s in streams),
            "out": sum(s.tokens_out for s in streams),
        },
        panel=_panel_summary(review_round),
        reviewers_failed=[s.name for s in streams if s.state == ReviewerStream.State.FAILED],
        prose_only=[
            s.name
            for s in streams
            if s.kind == ReviewerStream.Kind.MODEL
            and s.state == ReviewerStream.State.DONE
            and s.accepted == 0
            and not s.coverage_note
        ],
    )
    review_round.save(update_fields=["stats"])
    from reviews.services.rounds import round_transition

    with transaction.atomic():
        # Finished only from running (reviews/domain/round_states.py): a round superseded by a
        # push (or cancelled) while it ran gets no verdict and keeps its state; the round that
        # replaced it decides.
        if not round_transition(review_round, ReviewRound.State.FINISHED):
            review_round.refresh_from_db(fields=["state"])
            return
        round_finalise(review_round=review_round)
        space_flag_check(space=review_round.space_id)  # two rounds without approval: a person


def _panel_summary(review_round: ReviewRound) -> PanelOutcome:
    if (
        "panel" not in review_round.done_stages
        and not review_round.steps.filter(stage="panel").exists()
    ):
        return PanelOutcome(skipped=True)
    tags = [
        n.tags
        for n in ReviewNode.objects.filter(round=review_round, duplicate_of__isnull=True).only(
            "tags"
        )
    ]
    return PanelOutcome(
        verified=sum(tg.panel == "confirmed" for tg in tags),
        filtered=sum(tg.panel == "filtered" for tg in tags),
        contested=sum(tg.panel == "contested" for tg in tags),
        unverified=sum(bool(tg.unverified) for tg in tags),
        narrowed=bool(review_round.stats.panel_narrowed),
        skipped=False,
    )


INLINE = {"prepare": prepare, "consolidate": consolidate, "critic": critic, "finalise": finalise}
FANOUT = {
    "reviewers": create_reviewer_steps,
    "panel": create_panel_steps,
    "followup": create_followup_steps,
}
STEP_RUNNERS = {
    "reviewers": run_reviewer_step,
    "followup": run_reviewer_step,
    "panel": run_panel_step,
}
