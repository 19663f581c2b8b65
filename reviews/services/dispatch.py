"""Queue a round's pipeline after commit: Celery in the full stack, a thread when embedded.
The task is named, not imported: the pipeline's tasks call services, so services never import
them."""

from __future__ import annotations

from config.background import enqueue
from reviews.models import ReviewRound


def round_enqueue(review_round: ReviewRound) -> None:
    enqueue("reviews.pipeline_advance", review_round.pk)
