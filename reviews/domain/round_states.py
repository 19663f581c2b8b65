"""A review round's own states and the moves between them.

One table says which moves are allowed; the one service that writes `ReviewRound.state`
(reviews/services/rounds.py `round_transition`) refuses every other move, so a cancelled round
never comes back as finished and a finished one is never cancelled.

    queued (pending) → running → finished
          │              ├────→ failed
          │              ├────→ cancelled   (a person)
          │              └────→ superseded  (a newer head replaced it)
          └──→ failed / cancelled / superseded

Finished, failed, cancelled and superseded are terminal: a failed or cancelled round is never
restarted, it is re-run as a new round on the same head (`rerun_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class RoundState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"

    @property
    def label(self) -> str:
        return _LABELS[self]

    @property
    def terminal(self) -> bool:
        return not TRANSITIONS[self]


_LABELS = {
    RoundState.PENDING: "Queued",
    RoundState.RUNNING: "Running",
    RoundState.FINISHED: "Finished",
    RoundState.FAILED: "Failed",
    RoundState.CANCELLED: "Cancelled",
    RoundState.SUPERSEDED: "Superseded",
}

OPEN = frozenset({RoundState.PENDING, RoundState.RUNNING})

#: state → the states it may move to. Staying `running` (the next stage starts) is allowed.
TRANSITIONS: dict[RoundState, frozenset[RoundState]] = {
    RoundState.PENDING: frozenset(
        {RoundState.RUNNING, RoundState.FAILED, RoundState.CANCELLED, RoundState.SUPERSEDED}
    ),
    RoundState.RUNNING: frozenset(
        {
            RoundState.RUNNING,
            RoundState.FINISHED,
            RoundState.FAILED,
            RoundState.CANCELLED,
            RoundState.SUPERSEDED,
        }
    ),
    RoundState.FINISHED: frozenset(),
    RoundState.FAILED: frozenset(),
    RoundState.CANCELLED: frozenset(),
    RoundState.SUPERSEDED: frozenset(),
}


def may_move(old: str, new: str) -> bool:
    return RoundState(new) in TRANSITIONS[RoundState(old)]


def sources_of(new: str) -> frozenset[RoundState]:
    """Every state from which a round may move to `new` (the writer's compare-and-set)."""
    target = RoundState(new)
    return frozenset(s for s, targets in TRANSITIONS.items() if target in targets)


def state_label(state: str) -> str:
    try:
        return RoundState(state).label
    except ValueError:
        return state


def can_cancel(state: str) -> bool:
    return RoundState(state) in OPEN


def can_rerun(state: str) -> bool:
    """A round that ended without a verdict is reviewed again as a new round, same head."""
    return RoundState(state) in (RoundState.FAILED, RoundState.CANCELLED)


def refusal(old: str, new: str) -> str:
    """Why a round in `old` cannot become `new`, in the reader's words."""
    current = RoundState(old)
    if current.terminal:
        return f"it is already {current.label.lower()}"
    return f"a {current.label.lower()} round cannot become {RoundState(new).label.lower()}"


# -- which round a page shows, and what its delta compares with -------------------------------


@dataclass(frozen=True, slots=True)
class RoundRef:
    number: int
    state: str
    head_sha: str


def shown_round(rounds: Sequence[RoundRef], requested: int | None = None) -> int | None:
    """The round a review shows: the one asked for; else the newest, unless it ended without
    a verdict (failed, cancelled) while an earlier round finished: then that finished round,
    so a cancel or a failure never hides the last verdict."""
    if not rounds:
        return None
    numbers = {r.number for r in rounds}
    if requested is not None and requested in numbers:
        return requested
    ordered = sorted(rounds, key=lambda r: r.number)
    newest = ordered[-1]
    if RoundState(newest.state) in OPEN or newest.state == RoundState.FINISHED:
        return newest.number
    finished = [r for r in ordered if r.state == RoundState.FINISHED]
    return finished[-1].number if finished else newest.number


@dataclass(frozen=True, slots=True)
class DeltaBase:
    """What round `number`'s delta compares with: `baseline`, the last finished earlier round
    of a different head (None: nothing to compare), and `same_head_as`, the last finished
    earlier round of the same head (a re-run or an unchanged push), whose findings differ only
    by the reviewers' own variation and so are not a delta."""

    baseline: int | None
    same_head_as: int | None


def delta_base(rounds: Sequence[RoundRef], number: int) -> DeltaBase:
    this = next((r for r in rounds if r.number == number), None)
    if this is None:
        return DeltaBase(None, None)
    earlier = sorted(
        (r for r in rounds if r.number < number and r.state == RoundState.FINISHED),
        key=lambda r: r.number,
    )
    different = [r.number for r in earlier if r.head_sha != this.head_sha]
    same = [r.number for r in earlier if r.head_sha == this.head_sha]
    return DeltaBase(
        baseline=different[-1] if different else None, same_head_as=same[-1] if same else None
    )
