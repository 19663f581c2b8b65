"""The review space's status ladder.

requested → in_progress → awaiting_approval → completed. A new push starts a new round and moves
any space that is not completed back to requested. Publishing is possible only from
awaiting_approval.
"""

from __future__ import annotations

from enum import StrEnum


class SpaceStatus(StrEnum):
    REQUESTED = "requested"
    IN_PROGRESS = "in_progress"
    AWAITING_APPROVAL = "awaiting_approval"
    COMPLETED = "completed"


LADDER = (
    SpaceStatus.REQUESTED,
    SpaceStatus.IN_PROGRESS,
    SpaceStatus.AWAITING_APPROVAL,
    SpaceStatus.COMPLETED,
)

_ALLOWED: dict[SpaceStatus, frozenset[SpaceStatus]] = {
    SpaceStatus.REQUESTED: frozenset({SpaceStatus.IN_PROGRESS}),
    # Back to requested: a new push, or a round that failed or was cancelled and will re-run.
    SpaceStatus.IN_PROGRESS: frozenset({SpaceStatus.AWAITING_APPROVAL, SpaceStatus.REQUESTED}),
    SpaceStatus.AWAITING_APPROVAL: frozenset({SpaceStatus.COMPLETED, SpaceStatus.REQUESTED}),
    SpaceStatus.COMPLETED: frozenset({SpaceStatus.REQUESTED}),
}


class SpaceTransitionError(ValueError):
    pass


def check_space_transition(current: SpaceStatus, target: SpaceStatus) -> None:
    if target not in _ALLOWED[current]:
        raise SpaceTransitionError(
            f"A review space cannot go from {current.value} to {target.value}."
        )


def can_publish(status: SpaceStatus) -> bool:
    return status is SpaceStatus.AWAITING_APPROVAL
