"""A reviewer stream's states and the moves between them.

One table says which moves are allowed; the one service that writes `ReviewerStream.state`
(reviews/services/streams.py `stream_transition`) refuses every other move.

    pending → running → done
                │ ↺      (a new attempt after a crash starts running again)
                ├────→ failed  ──→ running   (its step is run again)
                └────→ skipped ──→ pending   (process block: the person supplied the request)
                                 → running   (its step is run again)

Done is terminal: a stream that finished is never run again, and nothing overwrites its
result.
"""

from __future__ import annotations

from enum import StrEnum


class StreamState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"

    @property
    def terminal(self) -> bool:
        return not TRANSITIONS[self]


#: state → the states it may move to. Staying `running` (a new attempt) is allowed.
TRANSITIONS: dict[StreamState, frozenset[StreamState]] = {
    StreamState.PENDING: frozenset({StreamState.RUNNING}),
    StreamState.RUNNING: frozenset(
        {StreamState.RUNNING, StreamState.DONE, StreamState.FAILED, StreamState.SKIPPED}
    ),
    StreamState.FAILED: frozenset({StreamState.RUNNING}),
    StreamState.SKIPPED: frozenset({StreamState.PENDING, StreamState.RUNNING}),
    StreamState.DONE: frozenset(),
}


def may_move(old: str, new: str) -> bool:
    return StreamState(new) in TRANSITIONS[StreamState(old)]


def sources_of(new: str) -> frozenset[StreamState]:
    """Every state from which a stream may move to `new` (the writer's compare-and-set)."""
    target = StreamState(new)
    return frozenset(s for s, targets in TRANSITIONS.items() if target in targets)
