"""Which rounds run at once, and when a coordinator's message counts as lost.

A burst of pull requests is reviewed as a queue of rounds, not as an interleaving of their
steps: at most `bound` rounds are admitted into work (running) at once, cluster-wide, and the
others wait (queued) in the order they were created. When a round ends (finished, failed,
superseded, cancelled) the oldest waiting rounds take the free places. Pure: the caller counts
the running rounds and lists the waiting ones under a lock, and writes what this decides.

The sweeper asks `message_overdue` before it sends a round a coordinator again: a message
dispatched recently, behind a queue of others, is waiting its turn, not lost.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The first look after a dispatch: an idle queue hands a message to a worker within this.
DISPATCH_GRACE_SECONDS = 5.0
#: What each message already in the queue adds to the grace (a cautious share of one task's
#: time across the workers' slots).
GRACE_PER_QUEUED_MESSAGE = 1.0


def admit[T](running: int, waiting: Sequence[T], bound: int) -> list[T]:
    """The waiting rounds (oldest first) admitted now, given how many rounds run. `bound` 0
    or less: no bound, every waiting round is admitted. Never more than the free places, and
    always the oldest: a round never overtakes one that waited longer."""
    if bound <= 0:
        return list(waiting)
    free = max(0, bound - max(0, running))
    return list(waiting[:free])


def dispatch_grace(queued: int, *, cap: float, base: float = DISPATCH_GRACE_SECONDS) -> float:
    """How long a coordinator's message may wait before the sweeper counts it lost: `base`,
    plus a share per message queued (`queued`), at most `cap` (a step's lease, after which
    a step's own message is sent again too)."""
    return min(max(cap, base), base + max(0, queued) * GRACE_PER_QUEUED_MESSAGE)


def message_overdue(waited: float | None, queued: int, *, cap: float) -> bool:
    """A round without a coordinator or a live step: True when its coordinator's message is
    lost (none was dispatched, `waited` None, or it waited longer than the grace the queue
    allows), False while it is still waiting its turn."""
    return waited is None or waited > dispatch_grace(queued, cap=cap)
