"""Celery tasks of the guardrails: thin, idempotent (execution happens once whatever calls it)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="guardrails.approval_execute", acks_late=True)
def approval_execute_task(request_id: int) -> None:
    from guardrails.services import approval_execute

    approval_execute(request_id=request_id)
