"""Asking a finding's reviewer a question: one model call whose spend is recorded in the round's
ledger like a reviewer's. Queued by the ask service (`reviews.thread_ask`), run by its task."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from reviews.agents.codetools import CodeTools
from reviews.agents.mode import CODE_TOOLS, ReviewMode
from reviews.agents.model_errors import ModelRunError
from reviews.agents.model_run_types import Answer, ReviewTools
from reviews.agents.runtime import ModelRuntime
from reviews.domain import asking as rules
from reviews.domain.redaction import redact_prose, redact_text
from reviews.domain.spend import CallRole
from reviews.domain.threads import ProposalKind
from reviews.domain.types import Priority
from reviews.models import ReviewNode, ThreadMessage
from reviews.pipeline.model_runs import spent
from reviews.services import threads
from reviews.services.asking import AskFailed, AskRefused, reviewer_config, thread_ability
from reviews.services.model_calls import config_key, runtime_model
from reviews.services.worktrees import round_worktree
from reviews.sources.diffs import parse_unified_diff
from reviews.sources.gitcmd import GitError
from reviews.sources.github_errors import GitHubError
from reviews.sources.worktrees import UnsafePath
from workspaces.models import reviewer_model

log = logging.getLogger(__name__)


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

    node = thread.node
    able = thread_ability(thread)
    if node is None or not able.allowed:
        threads.message_ask_failed(question=question, error=able.refusal)
        raise AskRefused(able.refusal)
    stream, review_round = node.stream, node.round
    space = review_round.space
    resolved = runtime_model(
        reviewer_model(reviewer_config(stream)), space.workspace, budget=rules.ASK_TOKEN_BUDGET
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


ANSWER = Answer(
    rules.AskAnswer,
    "Your answer to the question, and the change you propose to your finding if any",
    from_prose=rules.answer_from_prose,
)
