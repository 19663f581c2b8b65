"""Threads API: a review space's conversation (docs/review-json.md#threads). The same checks
and service as the page: any member reads, reviewers and up post (a refusal is audited), an
author corrects their message within the edit window."""

from __future__ import annotations

from typing import Annotated, Any

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Status
from pydantic import AfterValidator

from config.api_types import BodyId, Id, Input, Slug, Text, responses
from reviews.api.routes import _space
from reviews.api.schemas import ThreadMessageOut, ThreadOut
from reviews.domain.threads import BODY_MAX
from reviews.models import ThreadMessage
from reviews.reports.json_export import thread_message_json, threads_json
from reviews.selectors import thread_rows
from reviews.services import threads as thread_services
from workspaces.rules import Perm

router = Router(tags=["threads"])

# What Subject.parse reads, said in the schema: a malformed key is a 422, a well-formed one
# that names nothing in the review a 404.
SubjectKey = Annotated[
    str,
    Field(
        max_length=40,
        pattern=r"^((node|disagreement):[0-9]{1,11}|note:[0-9]{1,11}:[0-9]{1,11})$",
        description="node:<id>, disagreement:<id> or note:<stream id>:<index>",
    ),
]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("write something: an empty message is not posted")
    return value


MessageBody = Annotated[
    Text,
    Field(
        min_length=1,
        max_length=BODY_MAX,
        # What _not_blank checks, in the schema: something besides whitespace (as str.strip
        # counts it) and no NUL.
        json_schema_extra={"pattern": r"^[^\x00]*[^\x00\s][^\x00]*$"},
    ),
    AfterValidator(_not_blank),
]


class MessageIn(Input):
    body: MessageBody
    # A message of the same thread this one answers.
    in_reply_to: BodyId | None = None


class MessageEditIn(Input):
    body: MessageBody


def _thread_out(space: Any, key: str) -> dict[str, Any]:
    thread = thread_services.thread_get(space=space, key=key)
    found = threads_json(thread_rows(space=space, key=thread.key))
    return (
        found[0]
        if found
        else {"subject": thread.key, "node": thread.subject.node_id, "messages": []}
    )


@router.get(
    "/{slug}/reviews/{space_id}/threads",
    response=responses({200: list[ThreadOut]}, 404, 422),
    summary="A review's conversation, thread by thread",
)
def thread_list(request, slug: Slug, space_id: Id, subject: SubjectKey | None = None):
    """Every thread of the review that has messages (all rounds), in the order they were
    started; with `subject`, that one thread (its messages may be none yet; 404 when the review
    has no such finding, disagreement or note)."""
    _, space = _space(request, slug, space_id)
    if subject is not None:
        return [_thread_out(space, subject)]
    return threads_json(thread_rows(space=space))


@router.get(
    "/{slug}/reviews/{space_id}/threads/{key}",
    response=responses({200: ThreadOut}, 404, 422),
    summary="One thread's messages",
)
def thread_get(request, slug: Slug, space_id: Id, key: SubjectKey):
    """The messages of a finding's (`node:<id>`), a disagreement's (`disagreement:<key>`) or a
    reviewer note's (`note:<stream id>:<index>`) thread, in the order they were posted."""
    _, space = _space(request, slug, space_id)
    return _thread_out(space, key)


@router.post(
    "/{slug}/reviews/{space_id}/threads/{key}/messages",
    response=responses({201: ThreadMessageOut}, 400, 403, 404, 409, 413, 422),
    summary="Post a message in a thread",
)
def message_post(request, slug: Slug, space_id: Id, key: SubjectKey, body: MessageIn):
    """Markdown, up to 10,000 characters, attributed to the caller (an agent's token: "agent
    <name> for <address>"). Reviewers and up; a viewer is refused (403, audited as
    `permission.denied`). `in_reply_to` must be a message of the same thread (400 otherwise).
    Members it @mentions are told."""
    _, space = _space(request, slug, space_id, Perm.DISCUSS, "post in review threads")
    thread = thread_services.thread_get(space=space, key=key)
    answered = None
    if body.in_reply_to is not None:
        answered = get_object_or_404(ThreadMessage, pk=body.in_reply_to, space=space)
    message = thread_services.message_post(
        thread=thread, user=request.user, body=body.body, in_reply_to=answered
    )
    return Status(201, thread_message_json(message))


@router.patch(
    "/{slug}/reviews/{space_id}/messages/{message_id}",
    response=responses({200: ThreadMessageOut}, 400, 403, 404, 409, 413, 422),
    summary="Correct one's own message",
)
def message_edit(request, slug: Slug, space_id: Id, message_id: Id, body: MessageEditIn):
    """Its author may correct a message for 15 minutes after posting it (403 for anyone else or
    later: reply instead). The message shows as edited and the earlier text is kept."""
    _, space = _space(request, slug, space_id, Perm.DISCUSS, "edit review thread messages")
    message = get_object_or_404(ThreadMessage, pk=message_id, space=space)
    message = thread_services.message_edit(message=message, user=request.user, body=body.body)
    return thread_message_json(message)
