"""Celery tasks of the guardrails: thin, idempotent (execution happens once whatever calls it)."""

from __future__ import annotations

import smtplib
import time

from celery import shared_task
from django.conf import settings

from guardrails.notices import backoff_seconds
from guardrails.notify import approval_emails_send, webhook_deliver
from guardrails.services.execution import approval_execute


@shared_task(name="guardrails.approval_execute", acks_late=True)
def approval_execute_task(request_id: int) -> None:
    approval_execute(request_id=request_id)


@shared_task(
    name="guardrails.approval_emails",
    acks_late=True,
    autoretry_for=(OSError, smtplib.SMTPException),
    retry_backoff=10,
    retry_kwargs={"max_retries": 4},
)
def approval_emails_task(request_id: int, origin: str) -> None:
    """Email the approvers; a mail server error retries, and only those not yet told."""
    approval_emails_send(request_id=request_id, origin=origin)


@shared_task(name="guardrails.approval_webhook", acks_late=True)
def approval_webhook_task(request_id: int, origin: str, attempt: int = 1) -> None:
    """One delivery attempt; a failed one queues the next after an exponential backoff (in the
    embedded default, without a broker, the same thread waits and tries again)."""
    while webhook_deliver(request_id=request_id, origin=origin, attempt=attempt):
        delay = backoff_seconds(attempt, settings.QUORUM_WEBHOOK_BACKOFF_SECONDS)
        attempt += 1
        if settings.REDIS_URL:
            approval_webhook_task.apply_async(args=(request_id, origin, attempt), countdown=delay)
            return
        time.sleep(delay)
