"""A pipeline step's states and the moves between them.

One table says which moves are allowed; the one function that writes `PipelineStep.state`
(reviews/pipeline/runner.py `step_transition`) refuses every other move.

    pending ⇄ running → done
      ↺        ↺   ├──→ failed
                   ├──→ superseded
                   └──→ cancelled

A worker claims a pending step (or a running one whose lease lapsed: running again, a new
attempt), hands it back on a database blip (pending), or records its outcome; the sweeper
sends a stale step out again (pending, its clock restarted). A step whose round was superseded
by a push or cancelled while it waited or ran ends `superseded` or `cancelled`, not `failed`:
nothing went wrong with it (`closed_outcome`). Done, failed, superseded and cancelled are
terminal: a stage advances only when all of its steps are.
"""

from __future__ import annotations

from enum import StrEnum

from .round_states import RoundState


class StepState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SUPERSEDED = "superseded"  # its round was superseded by a push before the step ended
    CANCELLED = "cancelled"  # its round was cancelled before the step ended

    @property
    def terminal(self) -> bool:
        return not TRANSITIONS[self]


TRANSITIONS: dict[StepState, frozenset[StepState]] = {
    StepState.PENDING: frozenset({StepState.PENDING, StepState.RUNNING}),
    StepState.RUNNING: frozenset(
        {
            StepState.PENDING,
            StepState.RUNNING,
            StepState.DONE,
            StepState.FAILED,
            StepState.SUPERSEDED,
            StepState.CANCELLED,
        }
    ),
    StepState.DONE: frozenset(),
    StepState.FAILED: frozenset(),
    StepState.SUPERSEDED: frozenset(),
    StepState.CANCELLED: frozenset(),
}

#: Every state a step ends in (a stage advances once all of its steps are in one).
TERMINAL: tuple[StepState, ...] = tuple(s for s in StepState if not TRANSITIONS[s])

#: What a step records when its round ended (in these round states) before the step did.
_BY_ROUND_END: dict[str, StepState] = {
    RoundState.SUPERSEDED: StepState.SUPERSEDED,
    RoundState.CANCELLED: StepState.CANCELLED,
}


def closed_outcome(round_state: str) -> StepState:
    """The outcome of a step whose round is no longer open (`round_state`, as
    reviews/domain/round_states.py spells it): superseded or cancelled as the round was, and
    failed when the round itself failed (or finished without it, which the pipeline never
    does)."""
    return _BY_ROUND_END.get(round_state, StepState.FAILED)


def may_move(old: str, new: str) -> bool:
    return StepState(new) in TRANSITIONS[StepState(old)]


def sources_of(new: str) -> frozenset[StepState]:
    """Every state from which a step may move to `new` (the writer's compare-and-set)."""
    target = StepState(new)
    return frozenset(s for s, targets in TRANSITIONS.items() if target in targets)
