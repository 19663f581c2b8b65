"""A space's conversation: the one writer of ThreadMessage.

People (reviewer role and up; the caller checks the role) post and edit; a reviewer's answer
is posted by its stream; a reply on GitHub is recorded once per GitHub comment. Every message
goes out live to the space's pages after commit. A reviewer's proposal about its own finding is
decided here too, through the node service, audited.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from config.background import QueueUnavailable, submit_now
from reviews.domain import threads as rules
from reviews.domain.types import Priority
from reviews.live.events import emit
from reviews.models import (
    ReviewerStream,
    ReviewNode,
    ReviewSpace,
    ThreadMessage,
    ThreadMessageRevision,
)

log = logging.getLogger(__name__)


class ThreadRefused(ApplicationError):
    """The message was not posted or changed; the message says why."""

    code = ErrorCode.THREAD_REFUSED


@dataclass(frozen=True, slots=True)
class Thread:
    """A subject of the space, checked: its node (findings and disagreements) or its note."""

    space: ReviewSpace
    subject: rules.Subject
    node: ReviewNode | None
    stream: ReviewerStream | None  # a note's reviewer

    @property
    def key(self) -> str:
        return self.subject.key


def thread_get(*, space: ReviewSpace, key: str) -> Thread:
    """The thread `key` of `space`; ThreadRefused (404) when the space has no such subject."""
    try:
        subject = rules.Subject.parse(key)
    except rules.ThreadError as exc:
        raise ThreadRefused(str(exc)) from None
    node = stream = None
    if subject.kind is rules.SubjectKind.NOTE:
        stream_id, index = subject.ids
        stream = ReviewerStream.objects.filter(pk=stream_id, round__space=space).first()
        if stream is None or index >= len(stream.notes or []):
            raise ThreadRefused(f"This review has no note {key}.", http_status=404)
    else:
        node = (
            ReviewNode.objects.select_related("stream", "round")
            .filter(pk=subject.ids[0], space=space)
            .first()
        )
        if node is None:
            raise ThreadRefused(f"This review has no finding {subject.ids[0]}.", http_status=404)
    return Thread(space=space, subject=subject, node=node, stream=stream)


def thread_messages(*, space: ReviewSpace, key: str | None = None) -> QuerySet[ThreadMessage]:
    """The space's messages in the order they were posted, one thread's when `key` is given."""
    rows = ThreadMessage.objects.filter(space=space).select_related("stream")
    if key is not None:
        rows = rows.filter(subject=key)
    return rows.order_by("pk")


def _person_label(user: Any) -> tuple[str, str]:
    person = user.email or user.get_username()
    if agent := getattr(user, "quorum_agent", ""):
        return rules.Source.AGENT.value, f"agent {agent} for {person}"
    return rules.Source.PERSON.value, person


def emit_thread(message: ThreadMessage) -> None:
    emit(
        message.space_id,
        "review.thread",
        subject=message.subject,
        node_id=message.node_id,
        message_id=message.pk,
    )


def message_post(
    *, thread: Thread, user: Any, body: str, in_reply_to: ThreadMessage | None = None
) -> ThreadMessage:
    """A person's (or an outside agent's) message in the thread. The caller has checked the
    role; mentions are told after commit."""
    try:
        text = rules.clean_body(body)
    except rules.ThreadError as exc:
        raise ThreadRefused(str(exc)) from None
    source, label = _person_label(user)
    with transaction.atomic():
        message = ThreadMessage.objects.create(
            space=thread.space,
            subject=thread.key,
            node=thread.node,
            source=source,
            author=user,
            author_label=label[:200],
            in_reply_to=_same_thread(thread, in_reply_to),
            body=text,
        )
        emit_thread(message)
        _tell_mentioned(message)
    return message


def message_post_reviewer(
    *,
    thread: Thread,
    stream: ReviewerStream,
    body: str,
    in_reply_to: ThreadMessage | None = None,
    proposal: rules.Proposal | None = None,
) -> ThreadMessage:
    """A reviewer's answer, posted by its stream, with what it offers to change if anything."""
    text = rules.clean_body(body[: rules.BODY_MAX])
    with transaction.atomic():
        message = ThreadMessage.objects.create(
            space=thread.space,
            subject=thread.key,
            node=thread.node,
            source=rules.Source.REVIEWER.value,
            author_label=stream.name,
            stream=stream,
            in_reply_to=_same_thread(thread, in_reply_to),
            body=text,
            proposal_kind=proposal.kind.value if proposal else "",
            proposal_priority=(proposal.priority.value if proposal and proposal.priority else ""),
            proposal_fix=proposal.fix if proposal else "",
            proposal_state=rules.ProposalState.OPEN.value if proposal else "",
        )
        emit_thread(message)
    return message


def message_record_github(
    *,
    thread: Thread,
    login: str,
    body: str,
    comment_id: int,
    url: str = "",
    in_reply_to: ThreadMessage | None = None,
    root_id: int | None = None,
) -> tuple[ThreadMessage, bool]:
    """A reply written on GitHub, stored once per GitHub comment however often it is delivered:
    (the message, whether this call stored it). `root_id`: the top-level review comment of its
    conversation on GitHub (None for a comment on the pull request's own conversation)."""
    existing = ThreadMessage.objects.filter(
        space=thread.space, github_comment_id=comment_id
    ).first()
    if existing is not None:
        return existing, False
    try:
        text = rules.clean_body(body[: rules.BODY_MAX])
    except rules.ThreadError:
        text = "(an empty comment)"
    try:
        with transaction.atomic():
            message = ThreadMessage.objects.create(
                space=thread.space,
                subject=thread.key,
                node=thread.node,
                source=rules.Source.GITHUB.value,
                author_label=f"{login[:80]} on GitHub",
                in_reply_to=_same_thread(thread, in_reply_to),
                body=text,
                github_comment_id=comment_id,
                github_url=url[:500],
                github_root_id=root_id,
            )
            emit_thread(message)
    except IntegrityError:  # the same comment, delivered twice at once: the other one stored it
        return ThreadMessage.objects.get(space=thread.space, github_comment_id=comment_id), False
    return message, True


def message_posted_on_github(
    *, message: ThreadMessage, comment_id: int, url: str = "", root_id: int | None = None
) -> None:
    """Quorum posted the message on GitHub as comment `comment_id` (in the conversation of
    review comment `root_id`, or on the pull request's own conversation when None)."""
    now = timezone.now()
    ThreadMessage.objects.filter(pk=message.pk).update(
        github_comment_id=comment_id, github_url=url[:500], github_root_id=root_id, posted_at=now
    )
    message.github_comment_id, message.github_url = comment_id, url[:500]
    message.github_root_id, message.posted_at = root_id, now
    emit_thread(message)


def message_edit(*, message: ThreadMessage, user: Any, body: str) -> ThreadMessage:
    """The author corrects their message within the edit window; the earlier text is kept and
    the message shows as edited."""
    try:
        text = rules.clean_body(body)
    except rules.ThreadError as exc:
        raise ThreadRefused(str(exc)) from None
    with transaction.atomic():
        locked = ThreadMessage.objects.select_for_update().get(pk=message.pk)
        now = timezone.now()
        refusal = rules.edit_refusal(
            author_id=locked.author_id if locked.source != rules.Source.GITHUB else None,
            editor_id=user.pk,
            created_at=locked.created_at,
            now=now,
        )
        if refusal:
            raise ThreadRefused(refusal, http_status=403)
        if text == locked.body:
            return locked
        ThreadMessageRevision.objects.create(message=locked, body=locked.body)
        ThreadMessage.objects.filter(pk=locked.pk).update(body=text, edited_at=now)
        locked.body, locked.edited_at = text, now
        emit_thread(locked)
    return locked


def _same_thread(thread: Thread, message: ThreadMessage | None) -> ThreadMessage | None:
    if message is None:
        return None
    if message.space_id != thread.space.pk or message.subject != thread.key:
        raise ThreadRefused("A reply answers a message of the same thread.")
    return message


def _tell_mentioned(message: ThreadMessage) -> None:
    """Members the message mentions are told through the workspace's notification channel,
    after commit (reviews/tasks.py)."""
    handles = rules.mentions(message.body)
    if not handles:
        return

    def queue() -> None:

        try:
            submit_now("reviews.thread_mentions", message.pk)
        except QueueUnavailable as exc:  # the message stands; only the telling is lost
            log.warning("mentions of message %s were not told: %s", message.pk, exc)

    transaction.on_commit(queue)


def message_ask_mark(*, question: ThreadMessage) -> ThreadMessage:
    """The message is put to the finding's reviewer: the page says it waits for the answer."""
    now = timezone.now()
    ThreadMessage.objects.filter(pk=question.pk).update(
        asked_at=now, ask_error="", ask_started_at=None
    )
    question.asked_at, question.ask_error, question.ask_started_at = now, "", None
    emit_thread(question)
    return question


def message_ask_claim(*, question: ThreadMessage, lease: timedelta) -> bool:
    """Take the question to answer it, unless another worker took it within `lease` (a task
    delivered twice calls the model once; one whose worker died is taken again later)."""
    now = timezone.now()
    free = Q(ask_started_at__isnull=True) | Q(ask_started_at__lt=now - lease)
    taken = ThreadMessage.objects.filter(free, pk=question.pk, asked_at__isnull=False).update(
        ask_started_at=now
    )
    question.ask_started_at = now if taken else question.ask_started_at
    return bool(taken)


def message_ask_failed(*, question: ThreadMessage, error: str) -> None:
    """The reviewer could not answer: nothing is posted, the question says why."""
    text = " ".join(error.split())[:500] or "the model call failed"
    ThreadMessage.objects.filter(pk=question.pk).update(ask_error=text)
    question.ask_error = text
    emit_thread(question)


def message_proposal(message: ThreadMessage) -> rules.Proposal | None:
    """The proposal a reviewer's message carries, or None."""
    if not message.proposal_kind:
        return None
    priority = message.proposal_priority
    return rules.Proposal(
        rules.ProposalKind(message.proposal_kind),
        priority=Priority(priority) if priority else None,
        fix=message.proposal_fix,
    )
