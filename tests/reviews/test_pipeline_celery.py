"""The pipeline on PostgreSQL + Redis with real Celery workers.

Workers are separate processes started here; they reach the test database, the same Redis and
the fake model server over loopback, exactly as a deployment's workers would.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from reviews.models import ReviewNode, ReviewRound
from reviews.pipeline.runner import run_inline
from reviews.services.requests import review_request
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def _wait_finished(round_id: int, timeout: float = 180, logs: Path | None = None) -> ReviewRound:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        review_round = ReviewRound.objects.get(pk=round_id)
        if review_round.state in ("finished", "failed", "cancelled"):
            return review_round
        time.sleep(0.3)
    steps = list(review_round.steps.values_list("key", "state", "attempts", "lease_until"))
    # The workers' own words are the only account of a stuck round once CI has thrown tmp away.
    tails = [
        f"--- {log.name}\n{log.read_text()[-4000:]}"
        for log in sorted((logs or Path("/nonexistent")).glob("worker-*.log"))
    ]
    raise AssertionError(
        f"round {round_id} did not finish: stage {review_round.stage}, steps {steps}\n"
        + "\n".join(tails)
    )


def _node_set(review_round: ReviewRound) -> list[tuple]:
    """Every node as a sorted list, so a duplicated node would show (a set would hide it)."""
    rows = ReviewNode.objects.filter(round=review_round).values_list(
        "stream__name", "title", "path", "start_line", "duplicate_of_id"
    )
    return sorted(
        (stream, title, path, line, dup is None) for stream, title, path, line, dup in rows
    )


def test_a_thorough_review_runs_on_celery_workers(shop, fake_model, worker_factory, tmp_path):
    repo, base, head, alice = shop
    scenario.install(fake_model)
    worker_factory()
    review_round = review_request(
        repository=repo, actor=alice, base=base, head=head, tier="thorough"
    )
    review_round = _wait_finished(review_round.pk)
    assert review_round.state == "finished", review_round.error
    streams = set(review_round.streams.values_list("name", flat=True))
    assert {"implementation", "quality", "architecture", "security", "performance"} <= streams
    canonical = ReviewNode.objects.get(
        round=review_round, title="SQL query built from the search term", duplicate_of__isnull=True
    )
    assert canonical.credited_agents and canonical.status == "consensus_ready"
    assert review_round.verdict.level == "block"
    review_round.space.refresh_from_db()
    assert review_round.space.status == "reviewed"
    # The step that ends its stage moves the round on in its own task: one coordinator message
    # started the round (two if the sweeper looked in between), not one more per step.
    received = (tmp_path / "worker-0.log").read_text()
    steps = review_round.steps.count()
    assert steps >= 5
    tasks = re.findall(r"Task reviews\.(\w+)\[[-0-9a-f]+\] received", received)
    assert tasks.count("pipeline_step") == steps, tasks
    assert tasks.count("pipeline_advance") <= 2, tasks


def test_a_worker_killed_mid_review_loses_and_duplicates_nothing(
    shop, fake_model, worker_factory, tmp_path
):
    repo, base, head, alice = shop
    # Reference: the same review, uninterrupted, in this process.
    scenario.install(fake_model)
    reference = run_inline(
        review_request(
            repository=repo, actor=alice, base=base, head=head, tier="thorough", queue=False
        ).pk
    )
    expected = _node_set(reference)

    scenario.install(fake_model, latency=1.0)
    fast_recovery = {"QUORUM_STEP_LEASE_SECONDS": "3", "QUORUM_CELERY_VISIBILITY_TIMEOUT": "5"}
    worker = worker_factory(**fast_recovery)
    other = Repository.objects.create(
        workspace=repo.workspace, kind="local", local_path=repo.local_path + "/."
    )
    review_round = review_request(
        repository=other, actor=alice, base=base, head=head, tier="thorough"
    )
    deadline = time.monotonic() + 60
    while (
        not ReviewRound.objects.filter(pk=review_round.pk, stage="reviewers").exists()
        or not review_round.steps.filter(state="running").exists()
    ):
        assert time.monotonic() < deadline, "the reviewer stage never started"
        time.sleep(0.1)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    assert ReviewRound.objects.get(pk=review_round.pk).state in ("pending", "running")

    worker_factory(**fast_recovery)
    finished = _wait_finished(review_round.pk)
    assert finished.state == "finished", finished.error
    assert _node_set(finished) == expected
