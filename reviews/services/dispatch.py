"""Queue a round's pipeline after commit: Celery in the full stack, a thread when embedded.
The task is named, not imported: the pipeline's tasks call services, so services never import
them."""

from __future__ import annotations

import logging

from django.db import transaction

from config.background import QueueUnavailable, enqueue, submit_now
from reviews.models import ReviewRound

log = logging.getLogger(__name__)


def round_enqueue(review_round: ReviewRound) -> None:
    enqueue("reviews.pipeline_advance", review_round.pk)


def rounds_admit_enqueue() -> None:
    """A running round ended outside the pipeline (a cancel): once this commits, the oldest
    waiting rounds take the place it freed. If the queue is down the sweeper admits them."""

    def submit() -> None:
        try:
            submit_now("reviews.pipeline_admit")
        except QueueUnavailable as exc:
            log.warning("waiting rounds are admitted at the next sweep: %s", exc)

    transaction.on_commit(submit)
