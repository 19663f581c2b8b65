"""The reviewers' notes of a review: the comments they left with `add_note` and the
tickets they proposed, read for the notes section of the page and the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reviews.domain.round_stats import CohortSummary
from reviews.domain.tickets import issue_body, ticket_state
from reviews.models import ReviewerStream, ReviewerTicket, ReviewSpace


@dataclass(frozen=True)
class ReviewerComment:
    """A comment a reviewer left with `add_note`: not a finding, shown as it was written."""

    reviewer: str
    stream: str
    body: str
    path: str = ""
    line: int | None = None
    cohort: str = ""  # the page anchor of the cohort showing `path`, when one does
    key: str = ""  # its thread: note:<stream id>:<index in the stream's notes>

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.path and self.line else self.path


@dataclass(frozen=True)
class TicketView:
    """A ticket a reviewer proposed, with what its status allows now."""

    ticket: Any  # ReviewerTicket
    reviewer: str
    round_number: int
    state: Any  # reviews.domain.tickets.TicketState
    issue_body: str = ""  # what a GitHub issue's body starts as


@dataclass
class ReviewerNotes:
    comments: list[ReviewerComment] = field(default_factory=list)
    tickets: list[TicketView] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.comments) + len(self.tickets)


def reviewer_notes(
    *,
    space: ReviewSpace,
    streams: list[ReviewerStream],
    cohorts: list[CohortSummary] | None = None,
) -> ReviewerNotes:
    """Comments of the shown round's reviewers (from `streams`, no query) and every ticket of the
    space, earlier rounds included: a follow-up proposed once stays until someone decides it.
    One query."""
    anchors: dict[str, str] = {}
    for cohort in cohorts or []:
        for path in cohort.paths:
            anchors.setdefault(path, f"cohort-{cohort.key[:12]}")
    comments = []
    for stream in streams:
        for index, note in enumerate(stream.notes or []):
            if not isinstance(note, dict) or note.get("kind") != "comment":
                continue
            path = str(note.get("path") or "")
            line = note.get("line")
            comments.append(
                ReviewerComment(
                    reviewer=stream.agent,
                    stream=stream.name,
                    body=str(note.get("body") or ""),
                    path=path,
                    line=line if isinstance(line, int) and not isinstance(line, bool) else None,
                    cohort=anchors.get(path, ""),
                    key=f"note:{stream.pk}:{index}",
                )
            )
    rows = (
        ReviewerTicket.objects.filter(round__space=space)
        .select_related("stream", "round", "approval_request", "decided_by")
        .order_by("round__number", "stream__name", "note_index")
    )
    tickets = [
        TicketView(
            ticket=row,
            reviewer=row.stream.agent,
            round_number=row.round.number,
            state=ticket_state(
                row.status,
                request_status=row.approval_request.status if row.approval_request else None,
                request_id=row.approval_request_id,
            ),
            issue_body=issue_body(
                row.body,
                reviewer=row.stream.agent,
                pull_request=str(space.pull_request),
                round_number=row.round.number,
            ),
        )
        for row in rows
    ]
    return ReviewerNotes(comments=comments, tickets=tickets)
