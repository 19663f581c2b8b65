"""Celery tasks of the pipeline. Thin: take ids, call the runner (reviews/pipeline/runner.py)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="reviews.pipeline_advance")
def pipeline_advance_task(round_id: int) -> None:
    from reviews.pipeline.runner import advance

    advance(round_id)
