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
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from reviews.agents.codetools import CodeTools
from reviews.agents.mode import CODE_TOOLS, ReviewMode
from reviews.agents.model_errors import ModelRunError
from reviews.agents.model_run_types import Answer, ReviewTools
from reviews.agents.runtime import ModelRuntime
from reviews.domain import asking as rules
from reviews.domain.redaction import redact_prose, redact_text
from reviews.domain.spend import CallRole
from reviews.domain.threads import ProposalKind, SubjectKind
from reviews.domain.types import Priority, StreamKind
from reviews.models import ReviewerStream, ReviewNode, ThreadMessage
from reviews.services import threads
from reviews.sources.diffs import parse_unified_diff
from reviews.sources.gitcmd import GitError
from reviews.sources.github_errors import GitHubError
from reviews.sources.worktrees import UnsafePath
from workspaces.models import ReviewerConfig, Workspace, reviewer_model

log = logging.getLogger(__name__)

ANSWER = Answer(
    rules.AskAnswer,
    "Your answer to the question, and the change you propose to your finding if any",
    from_prose=rules.answer_from_prose,
)


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


def _config(stream: ReviewerStream) -> ReviewerConfig | None:
    from reviews.pipeline.model_runs import config_key

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
    from reviews.pipeline.model_runs import _missing_key, runtime_model

    kind = StreamKind(stream.kind)
    model = key_problem = ""
    if kind is StreamKind.MODEL:
        choice = reviewer_model(_config(stream) if config is _LOOK_UP else config)
        resolved = runtime_model(choice, workspace or stream.round.space.workspace, budget=1)
        if resolved is not None:
            model = resolved[0].model
            if not resolved[1]:
                key_problem = _missing_key(choice) or "the server has no API key for its model"
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
        from config.background import QueueUnavailable, submit_now

        try:
            submit_now("reviews.thread_ask", question.pk)
        except QueueUnavailable as exc:
            threads.message_ask_failed(question=question, error=f"not asked: {exc}")

    transaction.on_commit(queue)
    return question


def _finding(node: ReviewNode) -> rules.FindingText:
    if node.path:
        end = f"-{node.end_line}" if node.end_line and node.end_line != node.start_line else ""
        location = f"{node.path}:{node.start_line}{end}"
    else:
        location = "the whole change"
    if node.replacement_lines is not None:
        fix = "Replace the lines with:\n" + "\n".join(node.replacement_lines)
    else:
        fix = node.fix_diff or node.fix_prompt
    return rules.FindingText(
        id=node.pk,
        title=node.title,
        body=node.body,
        reasoning=node.reasoning,
        priority=node.priority,
        type=node.type,
        location=location,
        fix=fix,
        status=node.status,
    )


def _code_tools(node: ReviewNode) -> CodeTools | None:
    """The round's checkout, read-only; without it the reviewer answers from what it is shown
    (a question is worth answering when the repository cannot be reached)."""
    from reviews.services.worktrees import round_worktree

    review_round = node.round
    try:
        root = round_worktree(review_round=review_round)
    except (GitError, GitHubError, UnsafePath, OSError) as exc:
        log.warning("ask on node %s: no checkout of round %s: %s", node.pk, review_round.pk, exc)
        return None
    return CodeTools(root, changed_files=parse_unified_diff(review_round.diff))


def ask_reviewer(*, thread: threads.Thread, question: ThreadMessage, user: Any) -> ThreadMessage:
    """The finding's reviewer answers `question`, asked by `user`; returns its answer. A model
    error posts nothing and raises AskFailed (the question keeps the reason for the page)."""
    from reviews.pipeline.model_runs import config_key, runtime_model, spent

    node = thread.node
    able = thread_ability(thread)
    if node is None or not able.allowed:
        threads.message_ask_failed(question=question, error=able.refusal)
        raise AskRefused(able.refusal)
    stream, review_round = node.stream, node.round
    space = review_round.space
    resolved = runtime_model(
        reviewer_model(_config(stream)), space.workspace, budget=rules.ASK_TOKEN_BUDGET
    )
    assert resolved is not None  # ask_ability said the model resolves
    model, api_key = resolved
    model = replace(model, request_limit=rules.ASK_REQUEST_LIMIT)
    # What people wrote is redacted as prose (`password=hunter2` is a credential there), then
    # the whole prompt again by the runtime, as every prompt is.
    earlier = [
        rules.ThreadLine(author=m.author_label, source=m.source, body=redact_prose(m.body))
        for m in threads.thread_messages(space=space, key=thread.key).filter(pk__lt=question.pk)
    ]
    prompt = rules.ask_prompt(
        finding=_finding(node),
        thread=earlier,
        question=redact_prose(question.body),
        pr_title=space.pull_request.title,
        pr_description=space.pull_request.body,
    )
    name = f"ask-{config_key(stream)}"
    log.info("%s asks %s about node %s", getattr(user, "pk", None), stream.name, node.pk)
    try:
        outcome = ModelRuntime(model).run_sync(
            api_key=api_key,
            system_prompt=rules.ASK_SYSTEM_PROMPT.format(reviewer=stream.name),
            user_prompt=prompt,
            tools=ReviewTools(code=_code_tools(node)),
            mode=ReviewMode(CODE_TOOLS),
            name=name,
            answer=ANSWER,
        )
    except ModelRunError as exc:
        spent(review_round, role=CallRole.ASK, name=name, model=model, usage=exc.usage, failed=True)
        why = f"{stream.name} could not answer: {redact_text(str(exc))}"
        threads.message_ask_failed(question=question, error=why)
        raise AskFailed(why) from exc
    answer = outcome.answer
    spent(
        review_round,
        role=CallRole.ASK,
        name=name,
        model=model,
        usage=outcome.usage,
        failed=not isinstance(answer, rules.AskAnswer),
    )
    if not isinstance(answer, rules.AskAnswer):
        why = f"{stream.name} gave no usable answer: {outcome.answer_error or 'no answer'}"
        threads.message_ask_failed(question=question, error=why)
        raise AskFailed(why)
    node.refresh_from_db(fields=["priority"])
    settled = rules.settle_answer(answer, current=Priority(node.priority))
    proposal = settled.proposal
    if proposal is not None and proposal.kind is ProposalKind.REFINE_FIX:
        proposal = replace(proposal, fix=redact_text(proposal.fix))
    return threads.message_post_reviewer(
        thread=thread,
        stream=stream,
        body=redact_text(settled.body),
        in_reply_to=question,
        proposal=proposal,
    )


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
    from reviews.pipeline.model_runs import config_key

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
