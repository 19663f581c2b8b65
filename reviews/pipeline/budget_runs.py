"""Token budgets in the pipeline: what a round and its pull request have spent, what is left,
the plan at each decision point (reviews/domain/budget.py decides) and each run's cap.

Spend is the round's ledger: every model call writes what it spent there, reviewers, lenses,
critic and lead alike (`ModelCall`, read by `round_ledger`). A call planned
but not made yet is reserved: its estimate counts as spent until the stage that makes it is
done (`reserved_tokens`), so a decision taken in between never plans with tokens that call will
take, and none counts them twice once the ledger has them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from django.db.models import Count, F, IntegerField, OuterRef, Q, Subquery, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from reviews.agents.token_count import count_tokens
from reviews.domain import budget as b
from reviews.domain.panel import PanelPlan
from reviews.domain.round_states import RoundState
from reviews.domain.round_stats import BudgetReport, BudgetSkip, StageName
from reviews.domain.spend import CallRole
from reviews.models import ModelCall, ReviewerStream, ReviewNode, ReviewRound, ReviewSpace
from reviews.pipeline import round_reads
from reviews.pipeline.prompting import finding_code, findings_prompt, shared_brief
from reviews.selectors import node_view
from reviews.services.spend import Spent
from reviews.services.worktrees import round_worktree
from reviews.sources.diffs import ChangedFile

if TYPE_CHECKING:
    from reviews.pipeline.template import ConfiguredReviewer, ReviewerEntry

#: The calls every reviewed round makes besides its reviewers and panel: the lead's walkthrough
#: and the critic, each one shaped answer.
SHAPED_CALLS = 2
SHAPED_CALL_LABELS: tuple[tuple[Literal["lead", "critic"], str], ...] = (
    ("lead", "lead's walkthrough call"),
    ("critic", "critic's call"),
)
#: The stage that makes each shaped call (its ledger role): it stays reserved until then.
SHAPED_CALL_STAGES: tuple[tuple[CallRole, StageName], ...] = (
    (CallRole.LEAD, "consolidate"),
    (CallRole.CRITIC, "critic"),
)
_STAGE_ORDER: tuple[str, ...] = get_args(StageName)


@dataclass(frozen=True)
class Ledger:
    """What a decision needs of the round's ledger, read in one statement: the tokens spent
    (input and output) and which of the lead's and the critic's calls were made. A coordinator
    move reads it once for the decisions of all its stages, counting the calls they make."""

    tokens_in: int
    tokens_out: int
    made: frozenset[CallRole]

    @property
    def spent(self) -> int:
        return self.tokens_in + self.tokens_out


def round_ledger(review_round: ReviewRound) -> Ledger:
    """The round's ledger. A coordinator move reads it with the round (`ledger_columns`) and
    shares it (reviews/pipeline/round_reads.py), adding what its own calls spend
    (`ledger_spent`); anywhere else it is read here."""
    kept = round_reads.ledger(review_round)
    if kept is not None:
        return cast(Ledger, kept)
    made = {role: Count("pk", filter=Q(role=role)) for role, _ in SHAPED_CALL_STAGES}
    sums = ModelCall.objects.filter(round=review_round).aggregate(
        tokens_in=Coalesce(Sum("input_tokens"), 0),
        tokens_out=Coalesce(Sum("output_tokens"), 0),
        **{role.value: count for role, count in made.items()},
    )
    ledger = Ledger(
        int(sums["tokens_in"]),
        int(sums["tokens_out"]),
        frozenset(role for role in made if sums[role.value]),
    )
    round_reads.keep_ledger(review_round, ledger)
    return ledger


def ledger_columns() -> dict[str, Any]:
    """The round's ledger as columns of a read of its row (the coordinator's, at the start of
    each move): `ledger_of` makes the `Ledger` of them, and the move reads it no more."""
    calls = ModelCall.objects.filter(round=OuterRef("pk")).order_by().values("round")

    def total(aggregate: Any) -> Coalesce:
        return Coalesce(Subquery(calls.annotate(n=aggregate).values("n")[:1]), 0)

    return {
        "ledger_in": total(Sum("input_tokens")),
        "ledger_out": total(Sum("output_tokens")),
        **{
            f"ledger_{role.value}": total(Count("pk", filter=Q(role=role)))
            for role, _ in SHAPED_CALL_STAGES
        },
    }


def ledger_of(review_round: ReviewRound) -> Ledger | None:
    """The ledger read with the round (`ledger_columns`), if it was."""
    if not hasattr(review_round, "ledger_in"):
        return None
    return Ledger(
        int(getattr(review_round, "ledger_in")),  # noqa: B009 (annotations)
        int(getattr(review_round, "ledger_out")),  # noqa: B009
        frozenset(
            role for role, _ in SHAPED_CALL_STAGES if getattr(review_round, f"ledger_{role.value}")
        ),
    )


def ledger_spent(review_round: ReviewRound, calls: Sequence[Spent]) -> None:
    """`calls` were just recorded in the round's ledger: the ledger this move read, if it
    did, counts them as the table now does (spend.model_calls_record's bounds)."""
    kept = cast(Ledger | None, round_reads.ledger(review_round))
    if kept is None:
        return
    roles = {c.role for c in calls} & {role for role, _ in SHAPED_CALL_STAGES}
    round_reads.keep_ledger(
        review_round,
        Ledger(
            kept.tokens_in + sum(max(c.usage.input_tokens, 0) for c in calls),
            kept.tokens_out + sum(max(c.usage.output_tokens, 0) for c in calls),
            kept.made | roles,
        ),
    )


def _stage_over(review_round: ReviewRound, stage: str) -> bool:
    # Fan-out stages (reviewers, panels) are not in `done_stages`: a later current stage says
    # they are over.
    if stage in review_round.done_stages:
        return True
    current = review_round.stage
    return current in _STAGE_ORDER and _STAGE_ORDER.index(current) > _STAGE_ORDER.index(stage)


def reserved_tokens(review_round: ReviewRound, ledger: Ledger) -> int:
    """The estimates of the round's planned calls not made yet: the lead's and the critic's
    calls (when planned) until the ledger has them or their stage is over, and each panel
    stage's checks until that stage is over."""
    report = review_round.stats.budget
    if report is None or review_round.state not in (RoundState.PENDING, RoundState.RUNNING):
        return 0  # an ended round makes no more calls
    shaped = 0
    if report.shaped_calls:
        made = ledger.made
        shaped = sum(
            role not in made and not _stage_over(review_round, stage)
            for role, stage in SHAPED_CALL_STAGES
        )
    panel = sum(
        tokens
        for stage, tokens in report.panel_planned.items()
        if not _stage_over(review_round, stage)
    )
    return shaped * b.SHAPED_CALL + panel


def _legacy_spent(rounds) -> int:
    """What rounds reviewed before the ledger spent, as they recorded it then: their reviewer
    streams and the estimates of their other calls."""
    rounds = rounds.filter(model_calls__isnull=True)
    streams = ReviewerStream.objects.filter(round__in=rounds).aggregate(
        n=Sum(F("tokens_in") + F("tokens_out"))
    )["n"]
    unmetered = rounds.aggregate(n=Sum(Cast(KT("stats__budget__unmetered"), IntegerField())))["n"]
    return (streams or 0) + (unmetered or 0)


def space_spent_tokens(space: ReviewSpace, *, exclude: ReviewRound | None = None) -> int:
    """The model tokens every round of the pull request's space spent (but `exclude`)."""
    rounds = ReviewRound.objects.filter(space=space)
    if exclude is not None:
        rounds = rounds.exclude(pk=exclude.pk)
    ledger = ModelCall.objects.filter(round__in=rounds).aggregate(
        n=Sum(F("input_tokens") + F("output_tokens"))
    )["n"]
    return (ledger or 0) + _legacy_spent(rounds)


def budget_left(review_round: ReviewRound, ledger: Ledger | None = None) -> b.BudgetLeft:
    """What the budgets have left; `ledger`: the round's, when the caller has read it."""
    workspace = review_round.space.workspace
    ledger = ledger if ledger is not None else round_ledger(review_round)
    round_used = ledger.spent + reserved_tokens(review_round, ledger)
    pr_left = None
    if workspace.pr_token_budget is not None:
        pr_used = space_spent_tokens(review_round.space, exclude=review_round) + round_used
        pr_left = workspace.pr_token_budget - pr_used
    return b.BudgetLeft(workspace.round_token_budget - round_used, pr_left)


def _report(review_round: ReviewRound) -> BudgetReport:
    report = review_round.stats.budget
    if report is not None:
        return report
    workspace = review_round.space.workspace
    return BudgetReport(
        round_budget=workspace.round_token_budget, pr_budget=workspace.pr_token_budget
    )


def _record(
    review_round: ReviewRound,
    stage: StageName,
    skips: Sequence[b.Skip],
    **updates: Any,
) -> None:
    """Write the stage's skips (a re-run stage replaces its own) and the report's counters; the
    caller saves the stats."""
    report = _report(review_round)
    skipped = [s for s in report.skipped if s.stage != stage] + [
        BudgetSkip(
            stage=stage,
            kind=s.call.kind.value,
            key=s.call.key,
            estimate=s.call.estimate,
            left=s.left,
            budget=s.budget,
            reason=s.reason,
        )
        for s in skips
    ]
    review_round.stats = review_round.stats.with_(
        budget=report.model_copy(update={"skipped": skipped, **updates})
    )


# -- prepare: the reviewers ---------------------------------------------------------------------


def plan_reviewers(
    review_round: ReviewRound,
    entries: list[ReviewerEntry],
    configured: Iterable[ConfiguredReviewer],
    files: list[ChangedFile],
    *,
    high_risk: bool,
    model_ready: bool,
    analyzers: Iterable[str],
) -> list[ReviewerEntry]:
    """The entries that fit the budgets, the most valuable reviewer always among them while any
    budget is left; the skips are written to the round's stats (the caller saves them)."""
    _start_report(review_round)
    if not model_ready or not entries:
        _record(review_round, "prepare", [])
        return entries
    calls = _reviewer_calls(
        review_round, entries, configured, files, high_risk=high_risk, analyzers=analyzers
    )
    # The lead's walkthrough and the critic come later: reserved now, or, when the budgets
    # cannot pay for them, not made at all.
    ledger = round_ledger(review_round)  # prepare makes no call: one read for its decisions
    start = budget_left(review_round, ledger)
    shaped = start.left >= SHAPED_CALLS * b.SHAPED_CALL
    shaped_skips = [] if shaped else _shaped_skips(start)
    _record(review_round, "prepare", [], shaped_calls=shaped)
    plan = b.plan_within(budget_left(review_round, ledger), calls)
    model_kept = [c for c in plan.kept if c.estimate > 0]
    left = budget_left(review_round, ledger).left
    _record(
        review_round,
        "prepare",
        plan.skipped,
        reviewer_cap=max(left // max(len(model_kept), 1), 1),
    )
    if shaped_skips:
        report = _report(review_round)
        review_round.stats = review_round.stats.with_(
            budget=report.model_copy(update={"skipped": shaped_skips + list(report.skipped)})
        )
    kept = plan.kept_keys
    return [e for e in entries if e.key in kept]


def _start_report(review_round: ReviewRound) -> None:
    """The round's budget report, begun once: its budgets and what the pull request's earlier
    rounds had spent (with a PR budget)."""
    if review_round.stats.budget is not None:
        return
    space = review_round.space
    workspace = space.workspace
    before = 0
    if workspace.pr_token_budget is not None:
        before = space_spent_tokens(space, exclude=review_round)
    review_round.stats = review_round.stats.with_(
        budget=BudgetReport(
            round_budget=workspace.round_token_budget,
            pr_budget=workspace.pr_token_budget,
            pr_spent_before=before,
        )
    )


def _reviewer_calls(
    review_round: ReviewRound,
    entries: list[ReviewerEntry],
    configured: Iterable[ConfiguredReviewer],
    files: list[ChangedFile],
    *,
    high_risk: bool,
    analyzers: Iterable[str],
) -> list[b.PlannedCall]:
    """Each reviewer's planned call, with its estimate and its rank."""
    builtin = {c.key: c.builtin for c in configured}
    no_model = set(analyzers)
    request_known = bool(review_round.original_request.strip())
    brief_tokens: int | None = None
    calls = []
    for entry in entries:
        if entry.key in no_model or (entry.dimension == "requirements" and not request_known):
            estimate = 0  # an analyzer, or a reviewer that waits for the request: no model call
        else:
            # Every reviewer of the round is sent the same shared brief; its own part is small.
            if brief_tokens is None:
                brief_tokens = count_tokens(shared_brief(review_round, files, narrowed=False).text)
            estimate = b.reviewer_estimate(brief_tokens)
        calls.append(
            b.PlannedCall(
                kind=b.CallKind.REVIEWER,
                key=entry.key,
                label=f"{entry.key} reviewer",
                estimate=estimate,
                rank=b.reviewer_rank(
                    entry.dimension, high_risk=high_risk, builtin=builtin.get(entry.key, True)
                ),
            )
        )
    return calls


def _shaped_skips(start: b.BudgetLeft) -> list[BudgetSkip]:
    """The lead's walkthrough and the critic, skipped: the budgets cannot pay for them."""
    return [
        BudgetSkip(
            stage="prepare",
            kind=kind,
            key=kind,
            estimate=b.SHAPED_CALL,
            left=max(start.left, 0),
            budget=start.binding,
            reason=b.skip_reason(label, start.binding, estimate=b.SHAPED_CALL, left=start.left),
        )
        for kind, label in SHAPED_CALL_LABELS
    ]


# -- run caps ------------------------------------------------------------------------------------


def reviewer_cap(review_round: ReviewRound, *, share: int, followup: bool) -> int:
    """A reviewer's token cap: its share of the round budget, no more than what is left. The
    first-pass reviewers run side by side: each gets its part of what was left when they were
    planned (no read needed); the follow-up, what is left now."""
    report = review_round.stats.budget
    if report is not None and report.reviewer_cap and not followup:
        return max(min(share, report.reviewer_cap), 1)
    return max(min(share, budget_left(review_round).left), 1)


def shaped_calls_allowed(review_round: ReviewRound) -> bool:
    """Whether the round planned the lead's and the critic's calls (prepare decides)."""
    report = review_round.stats.budget
    return report is None or report.shaped_calls


def shaped_call_cap(review_round: ReviewRound, *, share: int) -> int:
    """The lead's or the critic's cap: what is left, plus its own estimate (reserved until its
    stage is done)."""
    return max(min(share, budget_left(review_round).left + b.SHAPED_CALL), 1)


def lens_cap(review_round: ReviewRound, *, share: int, estimate: int) -> int:
    """A lens's cap: its estimate (reserved when the panel was planned) plus what that planning
    left; lenses run side by side, and reading the spend again would not see theirs."""
    report = review_round.stats.budget
    room = report.panel_room if report is not None and report.panel_room is not None else share
    return max(min(share, estimate + room), 1)


# -- panel planning ------------------------------------------------------------------------------


def plan_panel_checks(
    review_round: ReviewRound,
    stage: StageName,
    candidates: Sequence[tuple[str, str, int]],
    ranks: dict[str, int],
) -> b.BudgetPlan:
    """Which of the findings the panel would verify (id, label, prompt tokens) fit; the kept
    checks' estimates are reserved until the stage is done. The caller saves."""
    calls = [
        b.PlannedCall(
            kind=b.CallKind.PANEL,
            key=node_id,
            label=f"panel check of {label}",
            estimate=b.panel_estimate(tokens),
            rank=ranks.get(node_id, len(ranks)),
        )
        for node_id, label, tokens in candidates
    ]
    report = _report(review_round)
    # A re-run planning replaces its own reservation rather than adding it twice.
    base = report.model_copy(
        update={"panel_planned": {k: v for k, v in report.panel_planned.items() if k != stage}}
    )
    review_round.stats = review_round.stats.with_(budget=base)
    ledger = round_ledger(review_round)
    plan = b.plan_within(budget_left(review_round, ledger), calls)
    _record(
        review_round,
        stage,
        plan.skipped,
        panel_planned={**base.panel_planned, stage: plan.estimate},
        panel_room=max(budget_left(review_round, ledger).left - plan.estimate, 0),
    )
    return plan


# -- critic: the follow-up -----------------------------------------------------------------------


def plan_follow_up(review_round: ReviewRound, dimension: str, files: list[ChangedFile]) -> bool:
    """Whether the critic's follow-up reviewer fits; a skip is written to the stats (saved by
    the critic)."""
    brief = shared_brief(review_round, files, narrowed=False).text
    estimate = b.reviewer_estimate(count_tokens(brief))
    call = b.PlannedCall(
        b.CallKind.FOLLOW_UP, dimension, f"follow-up {dimension} reviewer", estimate
    )
    plan = b.plan_within(budget_left(review_round), [call])
    _record(review_round, "critic", plan.skipped)
    return not plan.skipped


def record_spend(review_round: ReviewRound, ledger: Ledger) -> None:
    """The round's spend, for the report (finalise, which read the ledger; the caller saves
    the stats)."""
    if review_round.stats.budget is None:
        return
    report = _report(review_round)
    review_round.stats = review_round.stats.with_(
        budget=report.model_copy(update={"spent": ledger.spent})
    )


def panel_within_budget(
    review_round: ReviewRound, stage: str, plan: PanelPlan, nodes: Sequence[ReviewNode]
) -> PanelPlan:
    """The panel plan with the checks that do not fit moved to `unverified` (they pass through
    badged and counted, like the ones the cost guard skips). The caller saves the stats."""
    facts = review_round.facts
    if not plan.verify or facts is None or not facts.model_configured:
        return plan

    root = round_worktree(review_round=review_round)
    by_id = {str(n.pk): n for n in nodes}
    planned = [by_id[node_id] for node_id in plan.verify]
    candidates = [
        (
            str(n.pk),
            f"{n.priority} “{n.title[:60]}”",
            count_tokens(findings_prompt([("F1", n)], finding_code([n], root))),
        )
        for n in planned
    ]
    ranks = b.panel_ranks([node_view(n, []) for n in planned])
    budget_plan = plan_panel_checks(review_round, cast(StageName, stage), candidates, ranks)
    kept = budget_plan.kept_keys
    return replace(
        plan,
        verify=tuple(i for i in plan.verify if i in kept),
        unverified=plan.unverified + tuple(i for i in plan.verify if i not in kept),
    )
