"""Reviewer streams started together (run_inline's batch of claimed steps): one statement moves
every stream the table allows, with its own attempt counted, and leaves a finished one alone."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from reviews.domain.stream_states import StreamState
from reviews.models import ReviewerStream
from reviews.services.streams import stream_transition

pytestmark = pytest.mark.django_db


def test_streams_started_together_count_their_own_attempts_and_a_finished_one_stays_done(
    review_factory, stream_factory
):
    review_round = review_factory()
    stream_factory(review_round, "security")
    retried = stream_factory(review_round, "quality")
    done = stream_factory(review_round, "performance")
    ReviewerStream.objects.filter(pk=retried.pk).update(state="failed", attempts=1)
    ReviewerStream.objects.filter(pk=done.pk).update(state="done", attempts=1)
    # As a runner has them: each read with its round (the page is told which space moved).
    streams = list(
        ReviewerStream.objects.select_related("round").filter(round=review_round).order_by("pk")
    )

    with CaptureQueriesContext(connection) as queries:
        all_moved = stream_transition(streams, StreamState.RUNNING, attempts=F("attempts") + 1)

    assert not all_moved  # the finished stream could not move
    assert len(queries) == 2  # the move and one read back, whatever the number of streams
    stored = {s.name: (s.state, s.attempts) for s in ReviewerStream.objects.all()}
    assert stored == {
        "security": ("running", 1),
        "quality": ("running", 2),
        "performance": ("done", 1),
    }
    # The instances say what the rows say: each runner counts from its own.
    assert {s.name: (s.state, s.attempts) for s in streams} == stored


def test_one_stream_moves_as_before(review_factory, stream_factory):
    stream = stream_factory(review_factory(), "security")
    assert stream_transition(stream, StreamState.RUNNING, attempts=stream.attempts + 1)
    assert (stream.state, stream.attempts) == ("running", 1)
    assert not stream_transition(stream, StreamState.PENDING)  # not in the table: unchanged
    assert ReviewerStream.objects.get(pk=stream.pk).state == "running"


def test_streams_counting_their_attempts_from_their_claim_need_no_read_back(
    review_factory, stream_factory
):
    review_round = review_factory()
    stream_factory(review_round, "security")
    retried = stream_factory(review_round, "quality")
    ReviewerStream.objects.filter(pk=retried.pk).update(state="failed", attempts=1)
    streams = list(
        ReviewerStream.objects.select_related("round").filter(round=review_round).order_by("pk")
    )

    with CaptureQueriesContext(connection) as queries:
        assert stream_transition(streams, StreamState.RUNNING, count_attempt=True)

    assert len(queries) == 1  # every stream moved: what each became is what was written
    stored = {s.name: (s.state, s.attempts) for s in ReviewerStream.objects.all()}
    assert stored == {"security": ("running", 1), "quality": ("running", 2)}
    assert {s.name: (s.state, s.attempts) for s in streams} == stored

    # A stream whose count moved since it was read (another run counted an attempt) does not
    # move: compare-and-set on the count too, and what it is now is read back.
    again = list(
        ReviewerStream.objects.select_related("round").filter(round=review_round).order_by("pk")
    )
    ReviewerStream.objects.update(state="failed")
    ReviewerStream.objects.filter(pk=retried.pk).update(attempts=5)
    assert not stream_transition(again, StreamState.RUNNING, count_attempt=True)
    stored = {s.name: (s.state, s.attempts) for s in ReviewerStream.objects.all()}
    assert stored == {"security": ("running", 2), "quality": ("failed", 5)}
    assert {s.name: (s.state, s.attempts) for s in again} == {
        "security": ("running", 2),
        "quality": ("failed", 2),  # its state as it stands; its count as it was read
    }
