"""Conversations on GitHub about Quorum's comments: replies come in, answers go out.

In: a verified `pull_request_review_comment` or `issue_comment` delivery (created) on a pull
request Quorum reviewed is stored in the thread of the finding it is about (a reply in the
conversation of one of Quorum's inline comments, or a pull request comment that links to or
quotes one), once per GitHub comment. Comments by bots and apps (Quorum's own among them) are
never stored: answering a bot could loop. Edited and deleted comments change nothing: the
thread keeps what was first written, as it does for people's own messages. A stored message
that addresses Quorum (`@quorum`, or the workspace's handle) is a question (`question_received`).

Out: `answer_publish` asks the guardrails checkpoint (`threadAnswer`) to post a reviewer's
answer on GitHub, binding the repository, where it goes and the exact body; the executor posts
it once and marks the message as posted. Who asks: a person (reviewer and up, checked by the
caller), or nobody when the question came from GitHub (`requester=None`): then the app posts it
only if the workspace's policy allows answers without approval; otherwise the answer waits in
the thread until a person asks for it to be posted, and an approver approves.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Iterator
from typing import Any

from django.db import connection

from config.application_errors import ApplicationError, ErrorCode
from config.safeurl import web_url_or_blank
from guardrails.actions import ActionRefused
from guardrails.audit import APP, SYSTEM, Target, audit_record
from guardrails.models import ApprovalRequest
from guardrails.rules import ActionName, CheckpointOutcome, Policy
from guardrails.services.checkpoint import CheckpointResult, checkpoint, policy_for
from reviews.domain import github_replies as rules
from reviews.domain.redaction import redact_text
from reviews.domain.threads import BODY_MAX, Source, Subject
from reviews.models import (
    PublishedComment,
    PublishRecord,
    ReviewNode,
    ReviewSpace,
    ThreadMessage,
)
from reviews.services import asking, threads
from reviews.services.github import github_client
from reviews.services.github_tenancy import tenant_repositories
from reviews.sources.github_client import GitHubError
from reviews.sources.webhooks import CommentEvent
from workspaces.rules import archived_message

log = logging.getLogger(__name__)

_LOCK_SPACE = 0x51A7  # advisory locks: one GitHub conversation writer per review at a time


class AnswerRefused(ApplicationError):
    """The answer cannot be posted on GitHub; the message says why."""

    code = ErrorCode.ANSWER_REFUSED


@contextlib.contextmanager
def _conversation(space_id: int) -> Iterator[None]:
    """One writer of a review's GitHub conversation at a time: the answer being posted is
    recorded as posted before the webhook about that same comment is looked at, so Quorum's
    own reply is recognised as its own (PostgreSQL session advisory lock)."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_SPACE, space_id])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_SPACE, space_id])


# -- in --------------------------------------------------------------------------------------


def comment_receive(event: CommentEvent) -> str:
    """Store a GitHub comment in the thread it belongs to; returns the delivery's outcome."""
    where = f"{event.owner}/{event.repo}#{event.number}"
    if event.action != "created":
        return (
            f"ignored: a comment {event.action} on GitHub changes nothing here (the thread "
            "keeps what was first written)"
        )
    if event.bot:
        return f"ignored: {event.login} is a bot or an app (Quorum never answers one)"
    reachable = list(tenant_repositories(f"{event.owner}/{event.repo}", event.installation_id))
    live = [r for r in reachable if r.archived_at is None]
    if reachable and not live:
        return (
            f"ignored: {event.owner}/{event.repo} is disconnected in Quorum (archived); its "
            "reviews are read-only"
        )
    spaces = list(
        ReviewSpace.objects.select_related("workspace").filter(
            pull_request__repository__in=live, pull_request__number=event.number
        )
    )
    if not spaces:
        return f"ignored: Quorum has no review of {where}"
    outcomes = [_receive_in(space, event) for space in spaces]
    return "; ".join(outcomes)


def _receive_in(space: ReviewSpace, event: CommentEvent) -> str:
    with _conversation(space.pk):
        if _ours(space, event.comment_id):
            return "ignored: Quorum posted this comment"
        found = _thread_of(space, event)
        if found is None:
            if event.on_review_comment:
                return "ignored: not a reply to one of Quorum's comments"
            return "ignored: not about a finding"
        thread, answered, root = found
        message, created = threads.message_record_github(
            thread=thread,
            login=event.login,
            body=event.body,
            comment_id=event.comment_id,
            url=web_url_or_blank(event.url),
            in_reply_to=answered,
            root_id=root,
        )
    if not created:
        return f"already in thread {thread.key}"
    if rules.asks_quorum(message.body, space.workspace.github_handle):
        question_received(message)
        return f"stored in thread {thread.key}: a question for the reviewer"
    return f"stored in thread {thread.key}"


def _ours(space: ReviewSpace, comment_id: int) -> bool:
    return (
        PublishedComment.objects.filter(space=space, github_comment_id=comment_id).exists()
        or ThreadMessage.objects.filter(
            space=space, github_comment_id=comment_id, posted_at__isnull=False
        ).exists()
    )


def _thread_of(
    space: ReviewSpace, event: CommentEvent
) -> tuple[threads.Thread, ThreadMessage | None, int | None] | None:
    """(thread, the message it answers if stored, the conversation's top-level comment)."""
    if event.on_review_comment:
        parent_id = event.in_reply_to_id
        if parent_id is None:
            return None  # a new conversation of its own, not about a finding
        parent = ThreadMessage.objects.filter(space=space, github_comment_id=parent_id).first()
        if parent is not None:  # a reply to a reply we stored (or posted)
            thread = threads.thread_get(space=space, key=parent.subject)
            return thread, parent, parent.github_root_id or parent_id
        published = PublishedComment.objects.filter(
            space=space, github_comment_id=parent_id
        ).first()
        if published is None:
            return None
        thread = threads.thread_get(space=space, key=Subject.node(published.node_id).key)
        return thread, None, parent_id
    posted = [
        rules.Posted(node_id, comment_id, body)
        for node_id, comment_id, body in PublishedComment.objects.filter(space=space)
        .order_by("pk")
        .values_list("node_id", "github_comment_id", "body")
    ]
    node_id = rules.finding_of(event.body, [*posted, *_folded(space)])
    if node_id is None:
        return None
    return threads.thread_get(space=space, key=Subject.node(node_id).key), None, None


def _folded(space: ReviewSpace) -> list[rules.Posted]:
    """Findings a published review carried in its body (no comment of their own): a quote of
    their title or text names them too."""
    folded: set[int] = set()
    for plan in PublishRecord.objects.filter(
        space=space, state=PublishRecord.State.POSTED
    ).values_list("plan", flat=True):
        folded.update(
            entry["node"]
            for entry in (plan or {}).get("folded", [])
            if isinstance(entry.get("node"), int)
        )
    return [
        rules.Posted(node_id, 0, f"{title}\n{body}")
        for node_id, title, body in ReviewNode.objects.filter(space=space, pk__in=folded)
        .order_by("pk")
        .values_list("pk", "title", "body")
    ]


def question_received(message: ThreadMessage) -> None:
    """A message from GitHub asks Quorum something: audited, and put to the finding's reviewer
    when it can answer (reviews/services/asking.py). Its answer then goes back to GitHub through
    `answer_publish` (reviews/tasks.py `thread_ask_task`); a reviewer that cannot answer leaves
    the question in the thread, where the page says why."""
    space = message.space
    audit_record(
        action="thread.question_received",
        actor=SYSTEM,
        workspace=space.workspace,
        target=Target("reviewspace", str(space.pk), str(space.pull_request)),
        payload={
            "message": message.pk,
            "subject": message.subject,
            "from": message.author_label,
            "github_comment_id": message.github_comment_id,
        },
    )
    thread = threads.thread_get(space=space, key=message.subject)
    if asking.thread_ability(thread).allowed:
        asking.ask_queue(question=message)


# -- out -------------------------------------------------------------------------------------


def answer_digest(*, answer: int, question: int, repository: str, reply_to: int | None) -> str:
    """The 'head' a threadAnswer approval binds: which answer, to which question, where (the
    body is bound by the payload hash)."""
    canonical = json.dumps(
        {"answer": answer, "question": question, "repository": repository, "reply_to": reply_to},
        sort_keys=True,
    )
    return hashlib.sha1(canonical.encode(), usedforsecurity=False).hexdigest()


def _where(space: ReviewSpace) -> tuple[str, int]:
    pr = space.pull_request
    repository = pr.repository
    if repository.kind != "github" or pr.number is None:
        raise AnswerRefused("This review is of a local repository: there is no GitHub to answer.")
    if repository.archived_at is not None:
        raise AnswerRefused(archived_message(repository))
    return repository.full_name, pr.number


def answer_body(answer: ThreadMessage) -> str:
    """What is posted: the reviewer's words, redacted like everything that leaves, signed."""
    text = redact_text(answer.body).strip()[:BODY_MAX]
    return f"{text}\n\n— {answer.author_label} (Quorum reviewer)"


def answer_payload(*, answer: ThreadMessage, question: ThreadMessage) -> dict[str, Any]:
    """The threadAnswer payload: exactly what would be posted, and where."""
    if question.source != Source.GITHUB or question.github_comment_id is None:
        raise AnswerRefused("Only a question asked on GitHub is answered on GitHub.")
    if answer.space_id != question.space_id or answer.subject != question.subject:
        raise AnswerRefused("The answer belongs to another thread than the question.")
    if answer.source != Source.REVIEWER:
        raise AnswerRefused("Only a reviewer's answer is posted on GitHub for it.")
    space = ReviewSpace.objects.select_related("workspace", "pull_request__repository").get(
        pk=answer.space_id
    )
    repository, number = _where(space)
    reply_to = question.github_root_id
    return {
        "space": space.pk,
        "answer": answer.pk,
        "question": question.pk,
        "repository": repository,
        "number": number,
        "reply_to": reply_to,
        "body": answer_body(answer),
        "head_sha": answer_digest(
            answer=answer.pk, question=question.pk, repository=repository, reply_to=reply_to
        ),
    }


def question_of(answer: ThreadMessage) -> ThreadMessage:
    """The GitHub question a reviewer's answer replies to; AnswerRefused when there is none."""
    question = answer.in_reply_to
    if question is None or question.source != Source.GITHUB:
        raise AnswerRefused("This message does not answer a question asked on GitHub.")
    return question


def answer_publish(
    *, answer: ThreadMessage, question: ThreadMessage, requester: Any, http_request: Any = None
) -> Any:
    """Ask to post `answer` on GitHub as the answer to `question`, through the guardrails
    checkpoint. `requester`: the person asking (the caller checked their role), or None when
    the question came from GitHub and nobody here asked: the app then posts it only under a
    policy that allows it; otherwise nothing is requested yet (outcome pending, no request:
    the answer waits for a person to ask). Returns the checkpoint's result; an answer already
    posted is not posted again (allowed, with the first post's result)."""
    answer = ThreadMessage.objects.get(pk=answer.pk)  # as it is now: perhaps posted meanwhile
    if answer.posted_at is not None and answer.github_comment_id is not None:
        return CheckpointResult(CheckpointOutcome.ALLOWED, result=_posted_result(answer))
    payload = answer_payload(answer=answer, question=question)
    space = ReviewSpace.objects.select_related("workspace").get(pk=payload["space"])
    policy = Policy(policy_for(space.workspace, ActionName.THREAD_ANSWER).policy)
    if requester is None and policy == Policy.REQUIRE_APPROVAL:
        # An approval request names the person who asked; nobody here did yet.
        return CheckpointResult(
            CheckpointOutcome.PENDING,
            "The workspace posts answers on GitHub after approval: a person asks for it to be "
            "posted, and an approver approves.",
        )
    return checkpoint(
        action=ActionName.THREAD_ANSWER,
        actor=requester if requester is not None else APP,
        workspace=space.workspace,
        target=Target(
            "threadmessage",
            str(answer.pk),
            f"Answer on GitHub in {payload['repository']}#{payload['number']}",
        ),
        payload=payload,
        http_request=http_request,
    )


def _posted_result(answer: ThreadMessage) -> dict[str, Any]:
    return {
        "answer": answer.pk,
        "github_comment_id": answer.github_comment_id,
        "url": answer.github_url,
    }


def answer_execute(
    payload: dict[str, Any], requester: Any, approval: ApprovalRequest | None
) -> dict[str, Any]:
    """Executor of an approved (or allowed) threadAnswer: post the answer once and mark it
    posted. Called again after success, it returns the first post."""
    with _conversation(payload["space"]):
        answer = (
            ThreadMessage.objects.select_related("space__pull_request__repository")
            .filter(pk=payload["answer"], space_id=payload["space"])
            .first()
        )
        if answer is None:
            raise ActionRefused("The answer no longer exists: nothing was posted.")
        if answer.posted_at is not None and answer.github_comment_id is not None:
            return _posted_result(answer)
        try:
            repository, number = _where(answer.space)
        except AnswerRefused as exc:
            raise ActionRefused(str(exc)) from exc
        if (repository, number) != (payload["repository"], payload["number"]):
            raise ActionRefused(
                f"The review is now of {repository}#{number}, not "
                f"{payload['repository']}#{payload['number']}: ask again."
            )
        owner, name = repository.split("/", 1)
        reply_to = payload["reply_to"]
        try:
            with github_client() as client:
                if reply_to is not None:
                    posted = client.reply_to_review_comment(
                        owner, name, number, reply_to, body=payload["body"]
                    )
                else:
                    posted = client.create_issue_comment(owner, name, number, body=payload["body"])
        except GitHubError as exc:
            if getattr(exc, "maybe_applied", False):
                raise RuntimeError(
                    f"GitHub may have posted the answer before the connection failed ({exc}): "
                    f"check {repository}#{number} before asking again."
                ) from exc
            raise RuntimeError(f"GitHub refused the answer: {exc}") from exc
        threads.message_posted_on_github(
            message=answer,
            comment_id=int(posted["id"]),
            # GitHub's answer is still input: the URL becomes a link on our pages.
            url=web_url_or_blank(str(posted.get("html_url") or "")),
            root_id=reply_to,
        )
    return _posted_result(answer)


def answer_head(payload: dict[str, Any]) -> str:
    """What the answer's post would bind now (compared with the approved `head_sha`)."""
    answer = (
        ThreadMessage.objects.select_related("space__pull_request__repository")
        .filter(pk=payload["answer"], space_id=payload["space"])
        .first()
    )
    question = ThreadMessage.objects.filter(
        pk=payload["question"], space_id=payload["space"]
    ).first()
    if answer is None or question is None:
        return ""
    return answer_digest(
        answer=answer.pk,
        question=question.pk,
        repository=answer.space.pull_request.repository.full_name,
        reply_to=question.github_root_id,
    )


def answer_scope(payload: dict[str, Any]) -> tuple[int | None, str, str]:
    """(workspace id, target type, target id) a threadAnswer payload acts on."""
    workspace_id = (
        ThreadMessage.objects.filter(pk=payload["answer"], space_id=payload["space"])
        .values_list("space__workspace_id", flat=True)
        .first()
    )
    return workspace_id, "threadmessage", str(payload["answer"])
