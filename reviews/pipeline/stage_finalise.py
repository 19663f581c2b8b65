"""The finalise stage: the axes from what was covered and found, then the verdict."""

from __future__ import annotations

import time

from django.db import transaction

from reviews.domain import api_breaks
from reviews.domain import types as t
from reviews.domain.axes import deterministic_axes
from reviews.domain.round_stats import PanelOutcome, stage_timings
from reviews.models import ReviewerStream, ReviewNode, ReviewRound
from reviews.pipeline import budget_runs, inputs, round_reads
from reviews.selectors import node_view
from reviews.services import codeindex
from reviews.services.axes import AxisRow, axes_record, token_axes
from reviews.services.flags import space_flag_check
from reviews.services.rounds import round_transition
from reviews.services.verdicts import round_finalise


def finalise(review_round: ReviewRound) -> None:
    started = time.perf_counter()
    # Loaded once for the token axes, the test gap, the stats and the panel's summary (or as
    # the critic, just before in the same move, read them).
    streams = round_reads.streams(review_round)
    rows = round_reads.nodes(review_round)
    nodes = [node_view(n, []) for n in rows]
    recorded_rows = list(review_round.axes.values_list("axis", "source", "result"))
    axes, api_seconds = _round_axes(review_round, streams, nodes, recorded_rows)
    axes_record(review_round=review_round, results=axes)
    axes_seconds = time.perf_counter() - started - api_seconds
    # The round's axes as they stand now, for its verdict: those it had, with the ones written.
    standing = {t.AxisName(axis): t.AxisResult(result) for axis, _, result in recorded_rows}
    standing.update({axis: result for axis, result, _, _ in axes})
    ledger = budget_runs.round_ledger(review_round)  # the stats' tokens and the budget's spend
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
        # Every model call of the round, from its ledger: reviewers, lenses, critic, lead.
        tokens={"in": ledger.tokens_in, "out": ledger.tokens_out},
        panel=_panel_summary(review_round, rows),
        reviewers_failed=[s.name for s in streams if s.state == ReviewerStream.State.FAILED],
        # Model reviewers that closed without a structured statement: their findings stand,
        # but they covered nothing.
        prose_only=[
            s.name
            for s in streams
            if s.kind == ReviewerStream.Kind.MODEL
            and s.state == ReviewerStream.State.DONE
            and (s.closing is None or not s.closing.structured)
        ],
        timings=stage_timings(
            review_round.stats.timings,
            "finalise",
            {"axes": axes_seconds, "api_contract": api_seconds},
        ),
    )
    budget_runs.record_spend(review_round, ledger)
    _finish(review_round, streams, standing)


def _round_axes(
    review_round: ReviewRound,
    streams: list[ReviewerStream],
    nodes: list[t.NodeView],
    recorded_rows: list[tuple[str, str, str]],
) -> tuple[list[AxisRow], float]:
    """Every axis the finaliser records (they go in one upsert), and the seconds the API
    contract took."""
    api_seconds = 0.0
    facts = review_round.facts
    fast_exit = facts is not None and facts.fast_exit
    axes: list[AxisRow] = []
    recorded = {axis: source for axis, source, _ in recorded_rows}
    if fast_exit:
        review_round.stats = review_round.stats.with_(
            fast_exit_note="Docs-only or formatting-only change: approved with no reviewer."
        )
    else:
        axes += token_axes(review_round, streams, nodes, recorded)
        # The cohorts prepare stored: the same diff and indexes, not computed a second time.
        cohorts = review_round.stats.cohorts
        if cohorts is None:  # a round prepared before the cohorts were stored
            cohorts = list(
                codeindex.round_cohorts(review_round, inputs.round_worktree_ready(review_round))
            )
        result, details = codeindex.test_gap(cohorts, nodes)
        axes.append((t.AxisName.TEST_GAP, result, "cohorts", details))
    submitted = {axis for axis, source in recorded.items() if source == "submitted"}
    for axis, result, details in deterministic_axes(submitted=submitted, fast_exit=fast_exit):
        if axis is t.AxisName.API_CONTRACT and not fast_exit:
            clock = time.perf_counter()
            result, details = codeindex.api_contract(review_round)
            api_seconds = time.perf_counter() - clock
            # A person's acceptance of these breaks stands while it covers every one of them.
            previous = review_round.axes.filter(axis=axis.value).values_list("details", flat=True)
            kept = api_breaks.carried(previous.first(), details)
            if kept is not None:
                result, details = kept
        axes.append((axis, result, "deterministic", details))
    return axes, api_seconds


def _finish(
    review_round: ReviewRound,
    streams: list[ReviewerStream],
    standing: dict[t.AxisName, t.AxisResult],
) -> None:
    """The round finished with its stats and its first verdict, in one transaction."""
    with transaction.atomic():
        # Finished only from running (reviews/domain/round_states.py): a round superseded by a
        # push (or cancelled) while it ran gets no verdict and keeps its state; the round that
        # replaced it decides.
        # The round is over: the stage is recorded done with its stats, by the statement that
        # finishes it (the coordinator, which records a stage that ended its round, then has
        # nothing left to write).
        done = [*review_round.done_stages]
        if "finalise" not in done:
            done.append("finalise")
        # It lets go of the coordinator's lease too: nobody claims a round that ended.
        if not round_transition(
            review_round,
            ReviewRound.State.FINISHED,
            stats=review_round.stats,
            done_stages=done,
            lease_until=None,
            lease_token="",
        ):
            review_round.save(update_fields=["stats"])
            review_round.refresh_from_db(fields=["state"])
            return
        # The transition just wrote the round's row: this transaction holds its lock.
        # Its first verdict: a round gets one only once it has finished, as it just did.
        round_finalise(
            review_round=review_round, locked=True, streams=streams, axes=standing, first=True
        )
        # Two rounds without approval: a person. The space as the transition read it, locked.
        space_flag_check(space=review_round.space, locked=True)


def _panel_summary(review_round: ReviewRound, rows: list[ReviewNode]) -> PanelOutcome:
    groups = review_round.stats.panel_groups
    ran = (
        any(groups.values())
        if groups is not None  # the planning said how many groups it sent
        else review_round.steps.filter(stage__in=("panel", "followup_panel")).exists()
    )
    if "panel" not in review_round.done_stages and not ran:
        return PanelOutcome(skipped=True)
    tags = [n.tags for n in rows if n.duplicate_of_id is None]
    return PanelOutcome(
        verified=sum(tg.panel == "confirmed" for tg in tags),
        filtered=sum(tg.panel == "filtered" for tg in tags),
        contested=sum(tg.panel == "contested" for tg in tags),
        unverified=sum(bool(tg.unverified) for tg in tags),
        narrowed=bool(review_round.stats.panel_narrowed),
        skipped=False,
        rule_reachable=sum(
            tg.panel_lenses is not None and "reachability" not in tg.panel_lenses for tg in tags
        ),
    )
