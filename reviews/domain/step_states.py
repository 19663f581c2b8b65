"""A pipeline step's states and the moves between them.

One table says which moves are allowed; the one function that writes `PipelineStep.state`
(reviews/pipeline/runner.py `step_transition`) refuses every other move.

    pending ⇄ running → done
      ↺        ↺   └──→ failed

A worker claims a pending step (or a running one whose lease lapsed: running again, a new
attempt), hands it back on a database blip (pending), or records its outcome; the sweeper
sends a stale step out again (pending, its clock restarted). Done and failed are terminal: a
stage advances only when all of its steps are.
"""

from __future__ import annotations

from enum import StrEnum


class StepState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return not TRANSITIONS[self]


TRANSITIONS: dict[StepState, frozenset[StepState]] = {
    StepState.PENDING: frozenset({StepState.PENDING, StepState.RUNNING}),
    StepState.RUNNING: frozenset(
        {StepState.PENDING, StepState.RUNNING, StepState.DONE, StepState.FAILED}
    ),
    StepState.DONE: frozenset(),
    StepState.FAILED: frozenset(),
}


def may_move(old: str, new: str) -> bool:
    return StepState(new) in TRANSITIONS[StepState(old)]


def sources_of(new: str) -> frozenset[StepState]:
    """Every state from which a step may move to `new` (the writer's compare-and-set)."""
    target = StepState(new)
    return frozenset(s for s, targets in TRANSITIONS.items() if target in targets)
