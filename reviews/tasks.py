"""Celery discovers tasks in `<app>.tasks`; the pipeline's live in reviews/pipeline/tasks.py."""

from __future__ import annotations

import logging
import smtplib
import time

from celery import shared_task

from reviews.domain.asking import ASK_LEASE
from reviews.models import ThreadMessage
from reviews.pipeline.asking_runs import ask_reviewer
from reviews.pipeline.tasks import (
    pipeline_admit_task,
    pipeline_advance_task,
    pipeline_recover_task,
    pipeline_step_task,
    requirements_rerun_task,
)
from reviews.services.asking import AskFailed, AskRefused
from reviews.services.check_runs import check_run_sync
from reviews.services.github_replies import AnswerRefused, answer_publish
from reviews.services.sarif import sarif_process
from reviews.services.thread_mentions import mentions_tell
from reviews.services.threads import message_ask_claim, thread_get
from reviews.sources.github_errors import GitHubError

__all__ = [
    "check_run_sync_task",
    "pipeline_admit_task",
    "pipeline_advance_task",
    "pipeline_recover_task",
    "pipeline_step_task",
    "requirements_rerun_task",
    "sarif_process_task",
    "thread_ask_task",
    "thread_mentions_task",
]

log = logging.getLogger(__name__)

CHECK_RUN_RETRIES = 8
CHECK_RUN_MAX_WAIT = 600.0
# Embedded mode retries in a server thread: a few short tries, then the check waits for the
# round's next change to sync it (a thread asleep for minutes would hold up a shutdown).
EMBEDDED_RETRIES = 3
EMBEDDED_MAX_WAIT = 20.0


def check_run_backoff(retries: int, retry_at: float | None, now: float) -> float:
    """Seconds before the next try: GitHub's own wait when it named one, else 5s doubling."""
    if retry_at is not None:
        return min(max(retry_at - now, 1.0), CHECK_RUN_MAX_WAIT)
    return min(5.0 * 2**retries, CHECK_RUN_MAX_WAIT)


@shared_task(name="reviews.sarif_process", acks_late=True)
def sarif_process_task(upload_id: int) -> str:
    """Record an uploaded SARIF log on its round; a redelivery finds it done and does nothing."""

    return sarif_process(upload_id=upload_id).state


@shared_task(name="reviews.check_run_sync", bind=True, acks_late=True)
def check_run_sync_task(self, round_id: int) -> str:
    """Make the round's GitHub check show the round as it is now. A 5xx, a lost answer or a
    rate limit is retried with backoff (the sync claims before creating, so a retry updates the
    run instead of creating a second); anything else GitHub refuses is logged and dropped."""

    attempt = self.request.retries or 0
    while True:
        try:
            return check_run_sync(round_id=round_id)
        except GitHubError as exc:
            embedded = self.request.called_directly
            limit = EMBEDDED_RETRIES if embedded else CHECK_RUN_RETRIES
            if not exc.retryable or attempt >= limit:
                raise
            wait = check_run_backoff(attempt, getattr(exc, "retry_at", None), time.time())
            if not embedded:
                raise self.retry(exc=exc, countdown=wait, max_retries=CHECK_RUN_RETRIES) from exc
            # Embedded mode runs the task in a server thread: wait there, then try again.
            time.sleep(min(wait, EMBEDDED_MAX_WAIT))
            attempt += 1


@shared_task(
    name="reviews.thread_mentions",
    acks_late=True,
    autoretry_for=(OSError, smtplib.SMTPException),
    retry_backoff=10,
    retry_kwargs={"max_retries": 4},
)
def thread_mentions_task(message_id: int) -> int:
    """E-mail the members a thread message mentions (reviews/services/thread_mentions.py)."""

    return mentions_tell(message_id)


@shared_task(name="reviews.thread_ask", acks_late=True)
def thread_ask_task(question_id: int) -> str:
    """The finding's reviewer answers a question of its thread (reviews/services/asking.py).
    Not retried: a model call costs tokens, and a failure is shown on the question, where a
    person can ask again."""

    question = (
        ThreadMessage.objects.select_related("space", "author").filter(pk=question_id).first()
    )
    if question is None or question.asked_at is None:
        return "gone"
    if question.answers.filter(source=ThreadMessage.Source.REVIEWER).exists():
        return "answered"  # delivered twice: the first delivery answered it
    if not message_ask_claim(question=question, lease=ASK_LEASE):
        return "taken"  # delivered twice at once: the other delivery answers it
    thread = thread_get(space=question.space, key=question.subject)
    try:
        answer = ask_reviewer(thread=thread, question=question, user=question.author)
    except (AskFailed, AskRefused):
        return "failed"  # the question says why
    if question.source == ThreadMessage.Source.GITHUB:
        return _answer_on_github(answer, question)
    return "answered"


def _answer_on_github(answer, question) -> str:
    """A question asked on GitHub: its answer goes back there through the checkpoint. Nobody
    here asked, so the app posts it only where the workspace's policy allows; otherwise the
    answer waits in the thread for a person to ask for it to be posted (and an approver)."""

    try:
        result = answer_publish(answer=answer, question=question, requester=None)
    except AnswerRefused as exc:
        log.info("answer %s stays in the thread: %s", answer.pk, exc)
        return "answered here"
    except Exception:  # GitHub failed: the answer stands, and a person can still post it
        log.exception("answer %s could not be posted on GitHub", answer.pk)
        return "answered here"
    return f"answered; on GitHub: {result.outcome}"
