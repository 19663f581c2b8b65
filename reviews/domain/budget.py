"""Token budgets: which planned model calls a round makes within what is left.

A workspace gives each round a budget, and may give each pull request one (every round of it
together). At each decision point of the pipeline (reviewer selection, panel planning, the
critic's follow-up) the calls it is about to make are estimated and `plan_within` decides which
fit in the smaller of the two budgets' remainders, after a reserve for the calls that come
later and are not dropped here (the lead's walkthrough, the critic's call).

What goes, in this order, until the rest fits:
1. the critic's follow-up reviewer (a second look at a dimension nobody covered);
2. panel checks, the least important finding first (its findings pass through unverified, like
   the ones the panel's cost guard skips);
3. reviewers, the least valuable dimension for the change first; the most valuable one is kept
   whatever its estimate while any budget is left, so a round always has a model's eye on it.
Then, most valuable first, a dropped call comes back if it fits in what the kept ones leave, so
every skip's reason is true: its estimate is more than what was left for it. A round never fails
for its budget: it finishes with the calls that fit.

Estimates are counts of what will be sent (the brief or the finding, counted with o200k by the
caller) times the turns a run takes, plus what every call carries besides (system prompt, tool
and output schemas) and an allowance for the model's output. Each constant says where its figure
comes from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from .types import Dimension, NodeView

# -- estimates ------------------------------------------------------------------------------------

#: Turns of a reviewer's run: read what it needs, record its findings, close. The sample change's
#: thorough round makes 16 reviewer calls for 6 reviewers (tests/bench/bench_cost.py); 3 covers
#: the runs that read one more file.
REVIEWER_TURNS = 3
#: Sent with every reviewer call besides the brief: the system prompt and the tool and output
#: schemas, about 62% of what a reviewer call sends in bench_cost (≈ 2,300 tokens a call there),
#: rounded up. Each turn also re-sends the earlier ones: the output allowance covers that.
REVIEWER_CALL_OVERHEAD = 2_500
#: A reviewer's output per turn: a finding's payload with its reasoning is 300-600 tokens, a
#: turn records one or two; what it read comes back in the next turn's prompt.
REVIEWER_OUTPUT_PER_TURN = 1_200
#: A verification lens answers in one call (24 calls for 8 findings × 3 lenses in bench_cost).
LENS_TURNS = 1
LENSES = 3
#: A lens's system prompt, code tools and `LensAnswer` schema (≈ 900 tokens a call in bench_cost).
LENS_CALL_OVERHEAD = 1_000
#: A lens's verdict: a severity and a reason of a sentence or two.
LENS_OUTPUT = 300
#: One tool-less call answering in a shape (the lead's walkthrough, the critic): ≈ 500-800
#: tokens sent in bench_cost, with a change summary that grows with the change; reserved, not
#: planned, since their stages skip them on their own when nothing is left.
SHAPED_CALL = 2_000


def reviewer_estimate(brief_tokens: int) -> int:
    """A model reviewer's run, from the tokens of its brief (change map, files, the diff)."""
    return REVIEWER_TURNS * (brief_tokens + REVIEWER_CALL_OVERHEAD + REVIEWER_OUTPUT_PER_TURN)


def panel_estimate(finding_tokens: int) -> int:
    """The three lenses on one finding, from the tokens of the finding's prompt."""
    return LENSES * LENS_TURNS * (finding_tokens + LENS_CALL_OVERHEAD + LENS_OUTPUT)


# -- what is planned -----------------------------------------------------------------------------


class CallKind(StrEnum):
    """The calls a budget may drop, in the order it drops them."""

    FOLLOW_UP = "follow_up"
    PANEL = "panel"
    REVIEWER = "reviewer"


DROP_ORDER = (CallKind.FOLLOW_UP, CallKind.PANEL, CallKind.REVIEWER)

BudgetName = Literal["round", "pull request"]


@dataclass(frozen=True, slots=True)
class PlannedCall:
    kind: CallKind
    key: str  # the reviewer's key, the finding's id, the follow-up's dimension
    label: str  # how the report names it: "security reviewer", "panel check of P2 “…”"
    estimate: int
    rank: int = 0  # within its kind: 0 is the most valuable, dropped last


@dataclass(frozen=True, slots=True)
class BudgetLeft:
    """What is left of each budget: the round's, and the pull request's (None: no PR budget)."""

    round_left: int
    pr_left: int | None = None

    @property
    def left(self) -> int:
        return self.round_left if self.pr_left is None else min(self.round_left, self.pr_left)

    @property
    def binding(self) -> BudgetName:
        """The budget that limits: the pull request's when less of it is left."""
        if self.pr_left is not None and self.pr_left < self.round_left:
            return "pull request"
        return "round"


@dataclass(frozen=True, slots=True)
class Skip:
    call: PlannedCall
    left: int  # what the kept calls left for it (never below 0)
    budget: BudgetName

    @property
    def reason(self) -> str:
        return skip_reason(
            self.call.label, self.budget, estimate=self.call.estimate, left=self.left
        )


def skip_reason(label: str, budget: BudgetName, *, estimate: int, left: int) -> str:
    """ "follow-up security reviewer skipped: pull request budget would be exceeded (est. 9,100
    tokens, 4,000 left)"; `left` below 0 is shown as 0."""
    left = max(left, 0)
    what = "exhausted" if left == 0 else "would be exceeded"
    return f"{label} skipped: {budget} budget {what} (est. {estimate:,} tokens, {left:,} left)"


@dataclass(frozen=True, slots=True)
class BudgetPlan:
    kept: tuple[PlannedCall, ...]
    skipped: tuple[Skip, ...]

    @property
    def kept_keys(self) -> frozenset[str]:
        return frozenset(c.key for c in self.kept)

    @property
    def estimate(self) -> int:
        return sum(c.estimate for c in self.kept)


def _drop_key(call: PlannedCall) -> tuple[int, int]:
    # Earlier drops first: the kind's place in DROP_ORDER, then the least valuable (highest rank).
    return DROP_ORDER.index(call.kind), -call.rank


def plan_within(
    budget: BudgetLeft, calls: Iterable[PlannedCall], *, reserve: int = 0
) -> BudgetPlan:
    """Which of `calls` fit in what is left of the budget after `reserve` (the later calls this
    decision must leave room for). Keys are unique; estimates are not negative."""
    ordered = sorted(calls, key=_drop_key)
    available = max(budget.left - reserve, 0)
    reviewers = [c for c in ordered if c.kind is CallKind.REVIEWER]
    # The most valuable reviewer stays while anything is left: a round keeps one model's eye.
    protected = reviewers[-1] if reviewers and budget.left > 0 else None
    kept = list(ordered)
    dropped: list[PlannedCall] = []
    total = sum(c.estimate for c in kept)
    for call in ordered:
        if total <= available:
            break
        if call is protected or call.estimate == 0:  # a call that costs nothing stays
            continue
        kept.remove(call)
        dropped.append(call)
        total -= call.estimate
    # Most valuable first, a dropped call comes back when it fits beside what is kept.
    for call in reversed(dropped):
        if total + call.estimate <= available:
            kept.append(call)
            total += call.estimate
    room = max(available - total, 0)
    back = {c.key for c in kept}
    skipped = tuple(Skip(c, room, budget.binding) for c in dropped if c.key not in back)
    return BudgetPlan(tuple(sorted(kept, key=_drop_key)), skipped)


# -- value -----------------------------------------------------------------------------------


def reviewer_value_order(*, high_risk: bool) -> tuple[Dimension, ...]:
    """The reviewers a tight budget keeps longest, most valuable first. Implementation
    (correctness) is the broadest look at any change; with a high-risk pattern (auth, SQL,
    shell, secrets…) security comes before it. Requirements next (it checks the change against
    what was asked), then the dimensions whose misses cost least in one round."""
    first = (
        (Dimension.SECURITY, Dimension.IMPLEMENTATION) if high_risk else (Dimension.IMPLEMENTATION,)
    )
    rest = (
        Dimension.IMPLEMENTATION,
        Dimension.REQUIREMENTS,
        Dimension.SECURITY,
        Dimension.QUALITY,
        Dimension.PERFORMANCE,
        Dimension.ARCHITECTURE,
    )
    return (*first, *(d for d in rest if d not in first))


def reviewer_rank(dimension: str, *, high_risk: bool, builtin: bool = True) -> int:
    """A reviewer's rank for `PlannedCall.rank` (0: kept longest). A custom reviewer ranks just
    after the built-in reviewer of its dimension; an unknown dimension last."""
    order = [d.value for d in reviewer_value_order(high_risk=high_risk)]
    place = order.index(dimension) if dimension in order else len(order)
    return 2 * place + (0 if builtin else 1)


def panel_ranks(nodes: Sequence[NodeView]) -> dict[str, int]:
    """Each finding's rank for its panel check (0: checked longest): the most severe priority
    first, then severity, then the least confident (the panel's verdict moves those most)."""
    ordered = sorted(nodes, key=lambda n: (n.priority.rank, n.severity.rank, n.confidence, n.id))
    return {n.id: i for i, n in enumerate(ordered)}
