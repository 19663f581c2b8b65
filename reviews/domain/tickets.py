"""A ticket a reviewer proposed: what it shows and what a person may do with it now.

A ticket's own status says what a person decided (dismissed, asked for an issue, issue filed);
while an issue request is on its way, the approval request's status says where it is. A request
that ended without filing anything (denied, expired, withdrawn, failed) gives the ticket back:
it may be asked for again or dismissed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TicketStatus(StrEnum):
    OPEN = "open"
    DISMISSED = "dismissed"
    REQUESTED = "requested"
    CREATED = "created"

    @property
    def label(self) -> str:
        """The status in words as the admin shows it (the page says more: `ticket_state`)."""
        return _STATUS_LABELS[self]


_STATUS_LABELS = {
    TicketStatus.OPEN: "proposed",
    TicketStatus.DISMISSED: "dismissed",
    TicketStatus.REQUESTED: "issue awaiting approval",
    TicketStatus.CREATED: "issue created",
}


#: status → the statuses it may move to; the one writer (reviews/services/notes.py
#: `ticket_transition`) refuses every other move. An issue may be filed straight from a
#: proposed ticket (the policy allows it) or once its request is approved; a request that
#: ended without filing leaves the ticket requested, to be asked for again or dismissed.
TRANSITIONS: dict[TicketStatus, frozenset[TicketStatus]] = {
    TicketStatus.OPEN: frozenset(
        {TicketStatus.REQUESTED, TicketStatus.CREATED, TicketStatus.DISMISSED}
    ),
    TicketStatus.REQUESTED: frozenset(
        {TicketStatus.REQUESTED, TicketStatus.CREATED, TicketStatus.DISMISSED}
    ),
    TicketStatus.CREATED: frozenset(),
    TicketStatus.DISMISSED: frozenset(),
}


def sources_of(new: str) -> frozenset[TicketStatus]:
    """Every status from which a ticket may move to `new` (the writer's compare-and-set)."""
    target = TicketStatus(new)
    return frozenset(s for s, targets in TRANSITIONS.items() if target in targets)


#: Approval states in which an issue request may still file the issue.
REQUEST_OPEN = frozenset({"pending", "approved", "executing"})

#: GitHub's limits for an issue's title (256 characters) and body (65,536 characters).
TITLE_MAX = 256
BODY_MAX = 65_536


@dataclass(frozen=True)
class TicketState:
    label: str  # in words, for the page, the report and the JSON
    may_dismiss: bool
    may_request_issue: bool


def ticket_state(
    status: str, *, request_status: str | None = None, request_id: int | None = None
) -> TicketState:
    """What the ticket shows and allows, from its status and its issue request's status."""
    status = TicketStatus(status)
    if status is TicketStatus.DISMISSED:
        return TicketState("dismissed", False, False)
    if status is TicketStatus.CREATED:
        return TicketState("GitHub issue created", False, False)
    if status is TicketStatus.REQUESTED and request_status in REQUEST_OPEN:
        where = "waiting for an approver" if request_status == "pending" else "being filed"
        return TicketState(f"issue request #{request_id} {where}", False, False)
    if status is TicketStatus.REQUESTED:
        if request_id is None:
            return TicketState("proposed", True, True)
        ended = request_status or "closed"
        return TicketState(f"proposed (issue request #{request_id} {ended})", True, True)
    return TicketState("proposed", True, True)


def clean_issue(title: str, body: str) -> tuple[str, str]:
    """The issue's title and body as GitHub will accept them, or ValueError saying why not."""
    title = " ".join((title or "").split())
    body = (body or "").strip()
    if not title:
        raise ValueError("An issue needs a title.")
    if len(title) > TITLE_MAX:
        raise ValueError(f"An issue title has at most {TITLE_MAX} characters ({len(title)} given).")
    if len(body) > BODY_MAX:
        raise ValueError(f"An issue body has at most {BODY_MAX} characters ({len(body)} given).")
    return title, body


def issue_body(body: str, *, reviewer: str, pull_request: str, round_number: int) -> str:
    """The issue body a person starts from: the reviewer's text and where it came from."""
    origin = f"Proposed by the {reviewer} reviewer while reviewing {pull_request}"
    return f"{body.strip()}\n\n---\n{origin} (round {round_number}).".strip()
