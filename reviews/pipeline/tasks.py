"""Celery tasks of the pipeline. Thin: take ids, call the runner; a task run twice is harmless."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready


@shared_task(name="reviews.pipeline_advance", acks_late=True)
def pipeline_advance_task(round_id: int) -> None:
    from reviews.pipeline.runner import advance

    advance(round_id)


@shared_task(name="reviews.pipeline_step", acks_late=True)
def pipeline_step_task(step_id: int) -> None:
    from reviews.pipeline.runner import run_step

    run_step(step_id)


@shared_task(name="reviews.pipeline_recover")
def pipeline_recover_task() -> int:
    from reviews.pipeline.runner import recover

    return recover()


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs) -> None:
    # A worker that starts picks up what a killed one left (leases make this safe to repeat).
    pipeline_recover_task.delay()
