"""A review space's status, decided from facts rather than remembered.

The status is a pure function of what is true of the space (`SpaceFacts`); the one service
that writes it (reviews/services/spaces.py `space_status_refresh`) gathers the facts and stores
the result whenever one of them changes. So no path can leave a space "in progress" after its
round failed, or "awaiting approval" when nobody asked anything.

In order, first match wins:
1. the pull request was merged or closed, or a person marked the review done → completed;
2. the newest round is queued → requested; running → in_progress;
3. a publish request waits for an approver → awaiting_approval;
4. the newest round finished and was published → completed;
5. it finished → reviewed (the verdict is ready; publishing is offered);
6. it failed → failed; it was cancelled → cancelled (the last finished round stays readable);
7. no round yet → requested.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SpaceStatus(StrEnum):
    REQUESTED = "requested"
    IN_PROGRESS = "in_progress"
    REVIEWED = "reviewed"
    AWAITING_APPROVAL = "awaiting_approval"
    FAILED = "failed"
    CANCELLED = "cancelled"
    COMPLETED = "completed"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    SpaceStatus.REQUESTED: "Queued",
    SpaceStatus.IN_PROGRESS: "Reviewing",
    SpaceStatus.REVIEWED: "Verdict ready",
    SpaceStatus.AWAITING_APPROVAL: "Awaiting approval",
    SpaceStatus.FAILED: "Round failed",
    SpaceStatus.CANCELLED: "Round cancelled",
    SpaceStatus.COMPLETED: "Completed",
}

#: The order the list's filter offers them in.
LADDER = tuple(SpaceStatus)

#: The steps a review goes through when nothing goes wrong.
HAPPY_PATH = (
    SpaceStatus.REQUESTED,
    SpaceStatus.IN_PROGRESS,
    SpaceStatus.REVIEWED,
    SpaceStatus.AWAITING_APPROVAL,
    SpaceStatus.COMPLETED,
)


def stepper(status: SpaceStatus) -> tuple[SpaceStatus, ...]:
    """The steps the page shows: the happy path, or, when the round failed or was cancelled,
    the path up to where it stopped with that outcome in place of what would have come next.
    Outcomes are never shown as steps of their own."""
    if status in (SpaceStatus.FAILED, SpaceStatus.CANCELLED):
        return (SpaceStatus.REQUESTED, SpaceStatus.IN_PROGRESS, status)
    return HAPPY_PATH


class ClosedReason(StrEnum):
    MERGED = "merged"
    CLOSED = "closed"
    DONE = "done"  # a person marked it done, with a reason


@dataclass(frozen=True, slots=True)
class SpaceFacts:
    newest_round: str | None = None  # the newest round's state (ReviewRound.State value)
    publish_pending: bool = False  # a publish request is pending, approved or executing
    newest_published: bool = False  # the newest round's review was posted
    closed_reason: str = ""  # a ClosedReason value, or "" while open


def publish_facts_matter(*, newest_round: str | None, closed_reason: str) -> bool:
    """Whether the publish facts can change the status: not while the review is closed or its
    newest round has not ended (a round starting or running reads no publish rows)."""
    return not closed_reason and newest_round not in (None, "pending", "superseded", "running")


def space_status(facts: SpaceFacts) -> SpaceStatus:
    if facts.closed_reason:
        return SpaceStatus.COMPLETED
    state = facts.newest_round
    if state in (None, "pending", "superseded"):
        return SpaceStatus.REQUESTED
    if state == "running":
        return SpaceStatus.IN_PROGRESS
    if facts.publish_pending:
        return SpaceStatus.AWAITING_APPROVAL
    if state == "finished":
        return SpaceStatus.COMPLETED if facts.newest_published else SpaceStatus.REVIEWED
    if state == "failed":
        return SpaceStatus.FAILED
    return SpaceStatus.CANCELLED


def can_request_publish(status: SpaceStatus) -> bool:
    """A publish can be asked for once a round's verdict is ready and nothing is pending."""
    return status is SpaceStatus.REVIEWED


def can_execute_publish(status: SpaceStatus) -> bool:
    """A publish runs on a ready verdict: straight away where no approval is needed, or as
    the approved request the space is waiting for."""
    return status in (SpaceStatus.REVIEWED, SpaceStatus.AWAITING_APPROVAL)


def publish_refusal(status: SpaceStatus) -> str:
    """Why a publish cannot be asked for now, in the reader's words."""
    return {
        SpaceStatus.REQUESTED: "The review has not started yet: wait for its verdict.",
        SpaceStatus.IN_PROGRESS: "The review is still running: wait for its verdict.",
        SpaceStatus.AWAITING_APPROVAL: "A publish request is already waiting for an approver.",
        SpaceStatus.FAILED: "The last round failed: re-run it before publishing.",
        SpaceStatus.CANCELLED: "The last round was cancelled: re-run it before publishing.",
        SpaceStatus.COMPLETED: "This review is completed: it was published, or the pull "
        "request was merged or closed. A new push starts a round that can be published.",
    }.get(status, "")
