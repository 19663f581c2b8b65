"""Asking a finding's reviewer: the question is posted and marked, the model call runs in the
background (reviews/tasks.py `thread_ask_task`), and the answer is posted in the thread by the
reviewer's stream, with what it proposes about its finding (reviews/domain/asking.py).

The call runs as the reviewer runs in its round: its model and key as the settings resolve them
(reviews/pipeline/model_runs.py), review mode with only the read-only code tools over the
round's checkout, prompts redacted by the runtime, the answer redacted before it is stored, the
spend in the round's ledger (role ask). A call that fails posts nothing: the question says why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from config.background import QueueUnavailable, submit_now
from reviews.domain import asking as rules
from reviews.domain.threads import SubjectKind
from reviews.domain.types import StreamKind
from reviews.models import ReviewerStream, ReviewNode, ThreadMessage
from reviews.services import threads
from reviews.services.model_calls import config_key, missing_key, runtime_model
from workspaces.models import ReviewerConfig, Workspace, reviewer_model

log = logging.getLogger(__name__)


class AskRefused(ApplicationError):
    """The reviewer cannot be asked (no model, an offline analyzer, not a finding's thread)."""

    code = ErrorCode.ASK_REFUSED


class AskFailed(ApplicationError):
    """The model call failed: nothing was posted."""

    code = ErrorCode.ASK_FAILED
    http_status = 502


@dataclass(frozen=True)
class Askable:
    """Whether a finding's reviewer can be asked, and why not in words for the page."""

    reviewer: str
    refusal: str

    @property
    def allowed(self) -> bool:
        return not self.refusal


def reviewer_config(stream: ReviewerStream) -> ReviewerConfig | None:

    return ReviewerConfig.objects.filter(
        workspace_id=stream.round.space.workspace_id, key=config_key(stream)
    ).first()


_LOOK_UP: Any = object()


def ask_ability(
    stream: ReviewerStream, *, config: Any = _LOOK_UP, workspace: Workspace | None = None
) -> Askable:
    """Can the stream's reviewer answer a question: a model reviewer whose model and key the
    server has. `config` (its ReviewerConfig, or None) and `workspace`: when the caller read
    them already."""

    kind = StreamKind(stream.kind)
    model = key_problem = ""
    if kind is StreamKind.MODEL:
        choice = reviewer_model(reviewer_config(stream) if config is _LOOK_UP else config)
        resolved = runtime_model(choice, workspace or stream.round.space.workspace, budget=1)
        if resolved is not None:
            model = resolved[0].model
            if not resolved[1]:
                key_problem = missing_key(choice) or "the server has no API key for its model"
    refusal = rules.ask_refusal(
        reviewer=stream.name, kind=kind, model=model or None, key_problem=key_problem
    )
    return Askable(stream.name, refusal)


def workspace_configs(workspace_id: int) -> dict[str, ReviewerConfig]:
    """The workspace's reviewer settings by key: one query for a page's askable reviewers."""
    return {c.key: c for c in ReviewerConfig.objects.filter(workspace_id=workspace_id)}


def thread_ability(thread: threads.Thread) -> Askable:
    if thread.subject.kind is not SubjectKind.NODE or thread.node is None:
        return Askable("", "Only a finding's reviewer can be asked, in the finding's thread.")
    return ask_ability(thread.node.stream)


def ask_request(*, thread: threads.Thread, user: Any, body: str) -> ThreadMessage:
    """A person asks the finding's reviewer: the question is posted in the thread (the caller
    has checked the role) and put to the reviewer after commit."""
    able = thread_ability(thread)
    if not able.allowed:
        raise AskRefused(able.refusal)
    with transaction.atomic():
        question = threads.message_post(thread=thread, user=user, body=body)
        ask_queue(question=question)
    return question


def ask_queue(*, question: ThreadMessage) -> ThreadMessage:
    """Put a message already in a finding's thread to its reviewer (a person's question, or
    one asked on GitHub): marked as waiting now, answered in the background."""
    threads.message_ask_mark(question=question)

    def queue() -> None:

        try:
            submit_now("reviews.thread_ask", question.pk)
        except QueueUnavailable as exc:
            threads.message_ask_failed(question=question, error=f"not asked: {exc}")

    transaction.on_commit(queue)
    return question


@dataclass(frozen=True)
class AskPanel:
    """What a finding's thread shows about asking its reviewer."""

    reviewer: str
    refusal: str  # why the reviewer cannot be asked, "" when it can
    may_ask: bool  # the person's role allows asking (reviewer and up)
    waiting: bool  # a question is out and its answer has not landed
    failed: str  # why the last question went unanswered, if it did


def space_questions(space_id: int) -> tuple[set[int], dict[int, str]]:
    """The space's findings with a question waiting for its reviewer, and the last failure of
    each finding whose question went unanswered: read once per page."""
    open_questions = (
        ThreadMessage.objects.filter(space_id=space_id, asked_at__isnull=False, node__isnull=False)
        .exclude(answers__source=ThreadMessage.Source.REVIEWER)
        .order_by("pk")
        .values_list("node_id", "asked_at", "ask_error")
    )
    now = timezone.now()
    waiting: set[int] = set()
    failed: dict[int, str] = {}
    for node_id, asked_at, error in open_questions:
        pending, why = rules.question_state(asked_at=asked_at, answered=False, error=error, now=now)
        if pending:
            waiting.add(node_id)
        elif why:
            failed[node_id] = why
    return waiting, failed


def thread_questions(messages: list[ThreadMessage]) -> tuple[bool, str]:
    """(a question is waiting, why the last one went unanswered) from a finding's thread as the
    page loaded it: no query of its own."""
    answered = {m.in_reply_to_id for m in messages if m.source == ThreadMessage.Source.REVIEWER}
    now = timezone.now()
    waiting, failed = False, ""
    for m in messages:
        if m.asked_at is None or m.pk in answered:
            continue
        pending, why = rules.question_state(
            asked_at=m.asked_at, answered=False, error=m.ask_error, now=now
        )
        waiting, failed = waiting or pending, why or failed
    return waiting, "" if waiting else failed


def ask_panel(
    node: ReviewNode,
    *,
    may_ask: bool,
    abilities: dict[int, Askable],
    questions: tuple[set[int], dict[int, str]],
    configs: dict[str, ReviewerConfig] | None = None,
    workspace: Workspace | None = None,
) -> AskPanel:
    """`abilities` caches each stream's answer for the page's other findings; `configs` and
    `workspace`, when given, spare reading them again."""

    able = abilities.get(node.stream_id)
    if able is None:
        stream = node.stream
        config = _LOOK_UP if configs is None else configs.get(config_key(stream))
        able = abilities[node.stream_id] = ask_ability(stream, config=config, workspace=workspace)
    waiting, failed = questions
    return AskPanel(
        reviewer=able.reviewer,
        refusal=able.refusal,
        may_ask=may_ask,
        waiting=node.pk in waiting,
        failed="" if node.pk in waiting else failed.get(node.pk, ""),
    )
