"""A step whose round was superseded by a push or cancelled ends `superseded` or `cancelled`,
never `failed`: whether it was still waiting in the queue or running when the round ended.
A step that fails on an open round is still `failed`."""

from __future__ import annotations

import pytest

from reviews.models import PipelineStep, ReviewRound
from reviews.pipeline import stages
from reviews.pipeline.runner import TERMINAL_STEP_STATES, run_step, stalled_rounds
from reviews.services.rounds import round_cancel, round_start

pytestmark = pytest.mark.django_db


def _step(review_round: ReviewRound, key: str = "quality") -> PipelineStep:
    return PipelineStep.objects.create(round=review_round, stage="reviewers", key=key)


def _run(step: PipelineStep) -> list[tuple[str, int]]:
    sent: list[tuple[str, int]] = []
    run_step(step.pk, dispatch=lambda kind, object_id: sent.append((kind, object_id)))
    step.refresh_from_db()
    return sent


def _push(review_round: ReviewRound) -> ReviewRound:
    return round_start(space=review_round.space, head_sha="c" * 40, tier=review_round.tier)


def test_a_step_waiting_when_a_push_supersedes_its_round_ends_superseded(review_factory):
    review_round = review_factory()
    step = _step(review_round)
    _push(review_round)
    review_round.refresh_from_db()
    assert review_round.state == ReviewRound.State.SUPERSEDED

    assert _run(step) == []  # nothing to advance: the round is over

    assert step.state == "superseded"
    assert step.error == "round superseded"
    assert "superseded" in TERMINAL_STEP_STATES
    assert review_round.pk not in stalled_rounds()


def test_a_step_waiting_when_its_round_is_cancelled_ends_cancelled(review_factory, alice):
    review_round = review_factory()
    step = _step(review_round)
    round_cancel(review_round=review_round, actor=alice)

    _run(step)

    assert step.state == "cancelled"
    assert step.error == "round cancelled"


def test_a_step_running_when_a_push_supersedes_its_round_ends_superseded(
    review_factory, monkeypatch
):
    """The runner stops with an error because its round ended under it (its stream's writes
    refused): the outcome says superseded, with what stopped it."""
    review_round = review_factory()
    step = _step(review_round)

    def pushed_meanwhile(step: PipelineStep, reads: object) -> dict:
        _push(review_round)
        raise RuntimeError("the stream's round ended")

    monkeypatch.setitem(stages.STEP_RUNNERS, "reviewers", pushed_meanwhile)
    _run(step)

    assert step.state == "superseded"
    assert step.error == "the stream's round ended"


def test_a_step_that_fails_on_an_open_round_is_still_failed(review_factory, monkeypatch):
    review_round = review_factory()
    step = _step(review_round)

    def broken(step: PipelineStep, reads: object) -> dict:
        raise RuntimeError("the model refused")

    monkeypatch.setitem(stages.STEP_RUNNERS, "reviewers", broken)
    _run(step)

    assert step.state == "failed"
    assert step.error == "the model refused"
