"""Celery tasks of the pipeline. Thin: take ids, call the runner; a task run twice is harmless."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown

from reviews.models import ReviewerStream
from reviews.pipeline.admission import admit_waiting
from reviews.pipeline.reviewer_runs import run_stream
from reviews.pipeline.runner import advance_surviving, celery_dispatch, recover
from reviews.pipeline.step_tasks import run_step_then_advance
from reviews.pipeline.sweeper import start_sweeper, stop_sweeper
from reviews.services.verdicts import round_finalise


@shared_task(name="reviews.pipeline_advance", acks_late=True)
def pipeline_advance_task(round_id: int, sent_at: str | None = None) -> None:
    """`sent_at`: the stamp the message was sent with (reviews/pipeline/admission.py)."""
    advance_surviving(
        round_id, sent_at=datetime.fromisoformat(sent_at) if sent_at is not None else None
    )


@shared_task(name="reviews.pipeline_step", acks_late=True)
def pipeline_step_task(step_id: int) -> None:

    run_step_then_advance(step_id)


@shared_task(name="reviews.pipeline_admit", acks_late=True)
def pipeline_admit_task() -> int:
    """A running round was cancelled: the oldest waiting rounds take the free places."""

    return admit_waiting(celery_dispatch)


@shared_task(name="reviews.pipeline_recover")
def pipeline_recover_task() -> int:

    return recover()


@worker_ready.connect
def _sweep_while_running(sender=None, **kwargs) -> None:
    # Sweeps at once (what a killed worker left) and then every QUORUM_SWEEP_SECONDS (what a
    # lost message, a broker restart or a database blip left). Runs in the worker's main process.

    start_sweeper()


@worker_shutdown.connect
def _stop_sweeping(sender=None, **kwargs) -> None:

    stop_sweeper()


@shared_task(name="reviews.requirements_rerun", acks_late=True)
def requirements_rerun_task(stream_id: int, actor_id: int | None = None) -> None:
    """Re-run only the requirements reviewer once its request arrived, then decide again
    (the change is recorded as the doing of the person who supplied the request)."""
    from django.contrib.auth import get_user_model

    stream = ReviewerStream.objects.select_related("round").get(pk=stream_id)
    run_stream(stream)
    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    round_finalise(
        review_round=stream.round,
        reason="requirements reviewer ran with the supplied request",
        actor=actor,
    )
