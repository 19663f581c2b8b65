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


@shared_task(name="reviews.requirements_rerun", acks_late=True)
def requirements_rerun_task(stream_id: int) -> None:
    """Re-run only the requirements reviewer once its request arrived, then decide again."""
    from reviews.models import ReviewerStream
    from reviews.pipeline.reviewing import run_stream
    from reviews.services.verdicts import round_finalise

    stream = ReviewerStream.objects.select_related("round").get(pk=stream_id)
    run_stream(stream)
    round_finalise(review_round=stream.round)
