"""A reviewer's new attempt starts clean."""

from __future__ import annotations

from reviews.models import ReviewerStream, ReviewNode
from reviews.services.notes import notes_discard_unfinished


def reset_stream(stream: ReviewerStream) -> None:
    """A new attempt starts clean: findings of an unfinished attempt are not the reviewer's."""
    ReviewNode.objects.filter(stream=stream).delete()
    kept = notes_discard_unfinished(stream=stream)  # tickets a person already decided stay
    ReviewerStream.objects.filter(pk=stream.pk).update(
        accepted=0, rejected=0, rejection_reasons=[], notes=kept
    )
