"""Queue a round's pipeline after commit: Celery in the full stack, a thread when embedded."""

from __future__ import annotations

from config.background import enqueue
from reviews.models import ReviewRound


def round_enqueue(review_round: ReviewRound) -> None:
    from reviews.pipeline.tasks import pipeline_advance_task

    enqueue(pipeline_advance_task, review_round.pk)
