"""Comments and tickets reviewers leave, and what people decide about the tickets.

The only writer of a stream's comment/ticket notes and of ReviewerTicket. A proposed ticket is a
row from the moment the reviewer proposes it; a person dismisses it (audited) or asks for a
GitHub issue, which goes through the guardrails checkpoint as `issueCreate` exactly like a
publish: the approval binds the issue's repository, title and body, and it is filed once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from config.safeurl import web_url_or_blank
from guardrails.actions import ActionRefused
from guardrails.audit import Actor, Target, audit_record
from guardrails.models import ApprovalRequest
from guardrails.rules import CheckpointOutcome
from guardrails.services.checkpoint import checkpoint
from reviews.domain.redaction import redact_text
from reviews.domain.tickets import TicketStatus, clean_issue, issue_body, ticket_state
from reviews.domain.tickets import sources_of as ticket_sources_of
from reviews.live.events import emit
from reviews.models import ReviewerStream, ReviewerTicket
from reviews.services.github import github_client
from reviews.sources.github_client import GitHubError
from workspaces.rules import archived_message

log = logging.getLogger(__name__)

NOTE_KINDS = ("comment", "ticket")

LOCAL_REPOSITORY = (
    "This review is of a local repository: there is no GitHub repository to file an issue in. "
    "Dismiss the ticket, or copy it into your tracker yourself."
)


class TicketError(ApplicationError):
    """The ticket cannot be changed that way now; the message says why."""

    code = ErrorCode.TICKET_REFUSED


# -- a ticket's status ---------------------------------------------------------------------------


def ticket_transition(ticket: ReviewerTicket, to: TicketStatus, **fields: Any) -> bool:
    """The only writer of ReviewerTicket.status: moves the ticket to `to` if the table in
    reviews/domain/tickets.py allows it from the status it has now (compare-and-set), with the
    columns that go with the move. Returns False, changing nothing, when it is not allowed;
    the instance is updated when it moved."""
    moved = ReviewerTicket.objects.filter(
        pk=ticket.pk, status__in=[s.value for s in ticket_sources_of(to)]
    ).update(status=to.value, **fields)
    if not moved:
        return False
    ticket.status = to.value
    for name, value in fields.items():
        setattr(ticket, name, value)
    return True


# -- what reviewers leave ------------------------------------------------------------------------


def note_record(*, stream: ReviewerStream, kind: str, fields: dict[str, Any]) -> int:
    """Append a reviewer's comment or ticket to its stream, once: the same note sent again (a
    retried tool call) is not added twice. A ticket also becomes a ReviewerTicket row. Returns
    the note's index in the stream's notes."""
    if kind not in NOTE_KINDS:
        raise ValueError(f"unknown note kind {kind!r}")
    note = {"kind": kind, **fields}
    with transaction.atomic():
        locked = (
            ReviewerStream.objects.select_for_update(of=("self",))
            .select_related("round")
            .get(pk=stream.pk)
        )
        notes = list(locked.notes or [])
        if note in notes:
            index = notes.index(note)
        else:
            index = len(notes)
            notes.append(note)
            ReviewerStream.objects.filter(pk=locked.pk).update(notes=notes)
        if kind == "ticket":
            ReviewerTicket.objects.get_or_create(
                stream=locked,
                note_index=index,
                defaults={
                    "round": locked.round,
                    "title": str(fields.get("title") or "")[:300],
                    "body": str(fields.get("body") or ""),
                },
            )
        emit(locked.round.space_id, "review.note_added", stream=locked.name, kind=kind)
    return index


def notes_discard_unfinished(*, stream: ReviewerStream) -> list[dict[str, Any]]:
    """A reviewer's attempt starts again: its undecided tickets go with its notes. A ticket a
    person already decided about stays (its decision is history), and so does its note, at its
    index: returns the notes the new attempt starts from, so a new note never takes that index
    and the same ticket proposed again is recognised as the decided one."""
    ReviewerTicket.objects.filter(stream=stream, status=TicketStatus.OPEN).delete()
    decided = {t.note_index: t for t in ReviewerTicket.objects.filter(stream=stream)}
    if not decided:
        return []
    current = list(
        ReviewerStream.objects.filter(pk=stream.pk).values_list("notes", flat=True).first() or []
    )
    kept: list[dict[str, Any]] = []
    for index in range(max(decided) + 1):
        if index not in decided:
            kept.append({"kind": "discarded"})  # an unfinished attempt's note: keeps the places
        elif index < len(current) and current[index].get("kind") == "ticket":
            kept.append(current[index])
        else:
            kept.append(
                {"kind": "ticket", "title": decided[index].title, "body": decided[index].body}
            )
    return kept


# -- what people decide -----------------------------------------------------------------------


def _locked(ticket: ReviewerTicket) -> ReviewerTicket:
    return (
        ReviewerTicket.objects.select_for_update(of=("self",))
        .select_related(
            "approval_request",
            "stream",
            "round__space__workspace",
            "round__space__pull_request__repository",
        )
        .get(pk=ticket.pk)
    )


def _target(ticket: ReviewerTicket) -> Target:
    return Target("reviewerticket", str(ticket.pk), f"ticket “{ticket.title}”"[:300])


def _state(ticket: ReviewerTicket):
    request = ticket.approval_request
    return ticket_state(
        ticket.status,
        request_status=request.status if request else None,
        request_id=request.pk if request else None,
    )


def ticket_dismiss(
    *, ticket: ReviewerTicket, user: Any, reason: str = "", request: Any = None
) -> ReviewerTicket:
    """A person decides the ticket is not worth filing; audited with the reason."""
    reason = (reason or "").strip()[:2000]
    with transaction.atomic(durable=True):
        locked = _locked(ticket)
        if not _state(locked).may_dismiss:
            raise TicketError(f"This ticket cannot be dismissed: it is {_state(locked).label}.")
        ticket_transition(
            locked,
            TicketStatus.DISMISSED,
            decided_by=user,
            decided_at=timezone.now(),
            reason=reason,
        )
        space = locked.round.space
        audit_record(
            action="ticket.dismissed",
            actor=Actor.of(user),
            workspace=space.workspace,
            target=_target(locked),
            payload={
                "space": space.pk,
                "round": locked.round.number,
                "reviewer": locked.stream.agent,
                "title": locked.title,
                "reason": reason,
            },
            request=request,
        )
        emit(space.pk, "review.ticket", ticket=locked.pk, status=locked.status)
    return locked


def issue_digest(*, ticket_id: int, repository: str) -> str:
    """The 'head' an issueCreate approval binds: the ticket and the repository it is filed in
    (the title and body are bound by the payload hash)."""
    canonical = json.dumps({"ticket": ticket_id, "repository": repository}, sort_keys=True)
    return hashlib.sha1(canonical.encode(), usedforsecurity=False).hexdigest()


def _github_repository(ticket: ReviewerTicket) -> str:
    repository = ticket.round.space.pull_request.repository
    if repository.kind != "github":
        raise TicketError(LOCAL_REPOSITORY)
    if repository.archived_at is not None:
        raise TicketError(archived_message(repository))
    return repository.full_name


def ticket_issue_payload(*, ticket: ReviewerTicket, title: str, body: str) -> dict[str, Any]:
    """The issueCreate payload for this ticket: exactly what would be filed, and where."""
    repository = _github_repository(ticket)
    try:
        # What leaves for GitHub is redacted like everything else reviewers wrote.
        title, body = clean_issue(redact_text(title), redact_text(body))
    except ValueError as exc:
        raise TicketError(str(exc)) from exc
    return {
        "ticket": ticket.pk,
        "space": ticket.round.space_id,
        "repository": repository,
        "title": title,
        "body": body,
        "head_sha": issue_digest(ticket_id=ticket.pk, repository=repository),
    }


def issue_body_default(ticket: ReviewerTicket) -> str:
    return issue_body(
        ticket.body,
        reviewer=ticket.stream.agent,
        pull_request=str(ticket.round.space.pull_request),
        round_number=ticket.round.number,
    )


def ticket_issue_request(
    *,
    ticket: ReviewerTicket,
    actor: Any,
    title: str | None = None,
    body: str | None = None,
    http_request: Any = None,
) -> Any:
    """Ask for the ticket to become a GitHub issue through the guardrails checkpoint with the exact
    repository, title and body. Returns the checkpoint's result (allowed, pending or refused)."""
    # The ticket stays locked until the request exists: two people asking at once make one
    # request, and the second is told the ticket is already on its way.
    with transaction.atomic(durable=True):
        locked = _locked(ticket)
        if not _state(locked).may_request_issue:
            raise TicketError(
                f"An issue cannot be requested for this ticket: it is {_state(locked).label}."
            )
        payload = ticket_issue_payload(
            ticket=locked,
            title=locked.title if title is None else title,
            body=issue_body_default(locked) if body is None else body,
        )
        space = locked.round.space
        result = checkpoint(
            action="issueCreate",
            actor=actor,
            workspace=space.workspace,
            target=Target(
                "reviewerticket",
                str(locked.pk),
                f"Issue in {payload['repository']}: {payload['title']}"[:300],
            ),
            payload=payload,
            http_request=http_request,
        )
        if result.outcome is CheckpointOutcome.PENDING and result.request is not None:
            ticket_transition(locked, TicketStatus.REQUESTED, approval_request=result.request)
            emit(space.pk, "review.ticket", ticket=locked.pk, status=TicketStatus.REQUESTED)
    return result


def ticket_issue_execute(
    payload: dict[str, Any], requester: Any, approval: ApprovalRequest | None
) -> dict[str, Any]:
    """Executor of an approved (or allowed) issueCreate: file the issue on GitHub once and keep
    its number and link on the ticket. Called again after success, it returns the first issue."""
    with transaction.atomic():
        # The row lock makes a concurrent second execution wait, then see the filed issue.
        try:
            ticket = _locked(ReviewerTicket(pk=payload["ticket"]))
        except ReviewerTicket.DoesNotExist:
            raise ActionRefused("The ticket no longer exists: nothing was filed.") from None
        if ticket.status == TicketStatus.CREATED and ticket.issue_number:
            return _issue_result(ticket)
        if ticket.status == TicketStatus.DISMISSED:
            raise ActionRefused("The ticket was dismissed after the request: nothing was filed.")
        try:
            repository = _github_repository(ticket)
        except TicketError as exc:
            raise ActionRefused(str(exc)) from exc
        if repository != payload["repository"]:
            raise ActionRefused(
                f"The review is now of {repository}, not {payload['repository']}: ask again."
            )
        owner, name = repository.split("/", 1)
        try:
            with github_client() as client:
                issue = client.create_issue(
                    owner, name, title=payload["title"], body=payload["body"]
                )
        except GitHubError as exc:
            if getattr(exc, "maybe_applied", False):
                raise RuntimeError(
                    f"GitHub may have filed the issue before the connection failed ({exc}): "
                    f"check the issues of {repository} before asking again."
                ) from exc
            raise RuntimeError(f"GitHub refused the issue: {exc}") from exc
        ticket_transition(
            ticket,
            TicketStatus.CREATED,
            issue_number=int(issue["number"]),
            # GitHub's answer is still input: the URL becomes a link on our pages.
            issue_url=web_url_or_blank(str(issue.get("html_url") or ""))[:500],
            decided_by=requester if getattr(requester, "pk", None) else None,
            decided_at=timezone.now(),
        )
        emit(ticket.round.space_id, "review.ticket", ticket=ticket.pk, status=ticket.status)
    return _issue_result(ticket)


def _issue_result(ticket: ReviewerTicket) -> dict[str, Any]:
    return {
        "ticket": ticket.pk,
        "repository": ticket.round.space.pull_request.repository.full_name,
        "issue_number": ticket.issue_number,
        "url": ticket.issue_url,
    }


def ticket_issue_head(payload: dict[str, Any]) -> str:
    """What the ticket's issue would bind now (compared with the approved `head_sha`)."""
    ticket = (
        ReviewerTicket.objects.select_related("round__space__pull_request__repository")
        .filter(pk=payload["ticket"])
        .first()
    )
    if ticket is None:
        return ""
    repository = ticket.round.space.pull_request.repository
    return issue_digest(ticket_id=ticket.pk, repository=repository.full_name)


def ticket_issue_scope(payload: dict[str, Any]) -> tuple[int | None, str, str]:
    """(workspace id, target type, target id) an issueCreate payload acts on."""
    row = (
        ReviewerTicket.objects.filter(pk=payload["ticket"], round__space_id=payload["space"])
        .values_list("round__space__workspace_id", flat=True)
        .first()
    )
    return row, "reviewerticket", str(payload["ticket"])
