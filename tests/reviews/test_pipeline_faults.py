"""Reviews survive infrastructure faults: a Redis restart mid-review, PostgreSQL connections
killed mid-review, a review started while Redis is down.

Celery workers are real processes (tests/celery_support.py). The broker of the Redis tests is a
private redis-server on a free port of 127.0.0.1 that the test stops and starts; nothing else uses
it. Sweep interval and leases are shortened through the workers' environment.
"""

from __future__ import annotations

import socket
import subprocess
import time

import pytest
import redis
from django.db import connection

from config.celery import app as celery_app
from reviews.models import PipelineStep, PipelineSweep, ReviewRound
from reviews.pipeline.runner import run_inline, stalled_rounds
from reviews.pipeline.sweeper import Sweeper, sweep_once, take_turn
from reviews.services.requests import review_request
from tests.reviews import pipeline_scenarios as scenario
from tests.reviews.test_pipeline_celery import _node_set, _wait_finished
from workspaces.models import Repository

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

FAST = {
    "QUORUM_SWEEP_SECONDS": "1",
    "QUORUM_STEP_LEASE_SECONDS": "3",
    "QUORUM_CELERY_VISIBILITY_TIMEOUT": "5",
}


class PrivateRedis:
    """A redis-server of our own, without persistence: a restart loses every queued message."""

    def __init__(self, port: int, workdir) -> None:
        self.port, self.workdir, self.process = port, workdir, None
        self.url = f"redis://127.0.0.1:{port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.workdir)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            assert self.process.poll() is None, "private redis-server exited (port taken?)"
            try:
                redis.Redis.from_url(self.url, socket_timeout=1).ping()
                return
            except redis.RedisError:
                assert time.monotonic() < deadline, "private redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # a crash, not a shutdown
            self.process.wait()


def _free_port() -> int:
    # The system's choice, not a fixed range: this module's tests run on several xdist workers
    # at once, and two servers tried on one port answer for each other.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis(_free_port(), tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def broker(private_redis):
    """This process publishes to the private Redis too (the web side of the fault)."""
    previous = celery_app.conf.broker_url

    def point(url: str) -> None:
        celery_app.conf.broker_url = url
        celery_app._pool = None
        celery_app.amqp._producer_pool = None

    point(private_redis.url)
    yield private_redis
    point(previous)


def _wait_reviewing(review_round: ReviewRound) -> None:
    deadline = time.monotonic() + 60
    while (
        not ReviewRound.objects.filter(pk=review_round.pk, stage="reviewers").exists()
        or not review_round.steps.filter(state="running").exists()
    ):
        assert time.monotonic() < deadline, "the reviewer stage never started"
        time.sleep(0.1)


def _reference(shop, fake_model) -> list[tuple]:
    repo, base, head, alice = shop
    scenario.install(fake_model)
    done = run_inline(
        review_request(
            repository=repo, actor=alice, base=base, head=head, tier="thorough", queue=False
        ).pk
    )
    return _node_set(done)


def _second_repository(repo: Repository) -> Repository:
    return Repository.objects.create(
        workspace=repo.workspace, kind="local", local_path=repo.local_path + "/."
    )


# -- faults mid-review, with real workers ---------------------------------------------------------


def test_a_redis_restart_mid_review_loses_and_duplicates_nothing(
    shop, fake_model, worker_factory, broker, tmp_path
):
    repo, base, head, alice = shop
    expected = _reference(shop, fake_model)
    scenario.install(fake_model, latency=1.0)
    # Supervised: celery 5.7 can die on the outage (a late ack runs on the closed connection and
    # raises AttributeError, which it treats as unrecoverable); the stack's restart policy
    # brings it back and its sweeper recovers at start.
    worker_factory(supervised=True, REDIS_URL=broker.url, **FAST)
    review_round = review_request(
        repository=_second_repository(repo), actor=alice, base=base, head=head, tier="thorough"
    )
    _wait_reviewing(review_round)

    broker.stop()  # every queued step message dies with it
    time.sleep(5)
    # Stay down until the steps that were running have ended: their "advance" cannot be
    # published, so once Redis is back nothing moves this round unless the sweeper does.
    deadline = time.monotonic() + 30
    while review_round.steps.filter(state="running").exists():
        assert time.monotonic() < deadline, "a step kept running through the outage"
        time.sleep(0.2)
    time.sleep(2)  # the last step's "advance" is still retrying its publish for about a second
    assert ReviewRound.objects.get(pk=review_round.pk).state in ("pending", "running")
    assert review_round.steps.filter(state="pending").exists()  # lost with the messages
    broker.start()
    back = time.monotonic()

    # Generous: under a loaded CI the workers reconnect on a backoff of up to 30 s between tries.
    finished = _wait_finished(review_round.pk, timeout=120, logs=tmp_path)
    print(
        f"finished {time.monotonic() - back:.1f} s after Redis returned, "
        f"{worker_factory.restarts} worker restart(s)"
    )
    assert finished.state == "finished", finished.error
    assert _node_set(finished) == expected
    assert PipelineSweep.objects.get(name="pipeline").last_swept_at is not None


def test_database_connections_killed_mid_review_lose_and_duplicate_nothing(
    shop, fake_model, worker_factory
):
    repo, base, head, alice = shop
    expected = _reference(shop, fake_model)
    scenario.install(fake_model, latency=1.0)
    worker_factory(**FAST)
    review_round = review_request(
        repository=_second_repository(repo), actor=alice, base=base, head=head, tier="thorough"
    )
    _wait_reviewing(review_round)

    killed = 0
    for _ in range(2):  # twice: a reconnect must survive a second blip too
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                [connection.settings_dict["NAME"]],
            )
            killed += cursor.fetchone()[0]
        time.sleep(1.5)
    assert killed >= 2  # the workers' step and lease connections were there to kill
    back = time.monotonic()

    finished = _wait_finished(review_round.pk, timeout=60)
    print(f"finished {time.monotonic() - back:.1f} s after {killed} connections were killed")
    assert finished.state == "finished", finished.error
    assert _node_set(finished) == expected
    assert not finished.steps.exclude(state="done").exists()


# -- starting a review while Redis is down ---------------------------------------------------------


def test_a_review_started_while_redis_is_down_answers_503_and_starts_when_it_returns(
    shop, broker, client_for, settings
):
    repo, base, head, alice = shop
    settings.QUORUM_SWEEP_SECONDS = 1
    broker.stop()
    client = client_for(alice)
    api = f"/api/v1/workspaces/{repo.workspace.slug}/reviews"
    body = {"repository": repo.pk, "base": base, "head": head}

    started = time.monotonic()
    response = client.post(api, body, content_type="application/json")
    assert response.status_code == 503, response.content
    assert time.monotonic() - started < 10  # a dead broker fails fast, it does not hang
    data = response.json()
    assert "task queue is unavailable" in data["detail"] and "will start" in data["detail"]
    assert data["state"] == "pending"
    # Asking again (a script retrying) finds the same round: no orphan, no duplicate.
    again = client.post(api, body, content_type="application/json")
    assert again.status_code == 503 and again.json()["round"] == data["round"]
    page = client.post(
        f"/w/{repo.workspace.slug}/reviews/", {"repository": repo.pk, "base": base, "head": head}
    )
    assert page.status_code == 503
    assert b"the review is queued and will start when it returns" in page.content
    assert list(ReviewRound.objects.values_list("state", flat=True)) == ["pending"]
    # Not stalled: queued, it waits for a place among the rounds admitted at once, which the
    # sweeper gives it.
    assert stalled_rounds() == []

    # The sweeper meets the dead broker, says so, and keeps ticking.
    sweeper = Sweeper(interval=0.3).start()
    try:
        time.sleep(1)
        assert sweeper._thread.is_alive()
        broker.start()
        queue = celery_app.conf.task_default_queue
        deadline = time.monotonic() + 10
        while not redis.Redis.from_url(broker.url).llen(queue):
            assert time.monotonic() < deadline, "the sweeper never queued the round"
            time.sleep(0.1)
    finally:
        sweeper.stop()
    # Admitted (running) and its coordinator's message queued; a worker would now move it.
    assert ReviewRound.objects.get().state == "running"


# -- the sweeper's choices, without workers --------------------------------------------------------


def test_one_sweep_per_interval_across_processes_unless_a_process_just_started(db):
    assert take_turn(60)
    assert not take_turn(60)  # another worker, same interval: not its turn
    assert take_turn(60, force=True)  # a worker that just started recovers at once
    PipelineSweep.objects.filter(name="pipeline").update(
        next_at=PipelineSweep.objects.get(name="pipeline").next_at.replace(year=2000)
    )
    assert sweep_once(interval=60) == 0


def test_only_rounds_that_nobody_moves_are_stalled(review_factory, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.QUORUM_STEP_LEASE_SECONDS = 60
    now = timezone.now()

    def round_with(*steps, lease=None, sent=None):
        review_round = review_factory()  # a workspace (and so a space) of its own
        ReviewRound.objects.filter(pk=review_round.pk).update(
            state="running", lease_until=lease, advance_sent_at=sent
        )
        for index, (state, lease_until, age) in enumerate(steps):
            step = PipelineStep.objects.create(
                round=review_round, stage="reviewers", key=f"s{index}", state=state
            )
            PipelineStep.objects.filter(pk=step.pk).update(
                lease_until=lease_until, updated_at=now - timedelta(seconds=age)
            )
        return review_round.pk

    later, earlier = now + timedelta(seconds=30), now - timedelta(seconds=1)
    never_queued = round_with()
    coordinator_alive = round_with(lease=later)
    steps_alive = round_with(("running", later, 0), ("pending", None, 5), ("done", None, 500))
    worker_died = round_with(("running", earlier, 0), ("done", None, 500))
    message_lost = round_with(("running", later, 0), ("pending", None, 500))
    all_done_advance_lost = round_with(("done", None, 500))
    advance_queued = round_with(("done", None, 500), sent=now)
    advance_overdue = round_with(("done", None, 500), sent=now - timedelta(seconds=59))
    finished = round_with()
    ReviewRound.objects.filter(pk=finished).update(state="finished")
    waiting = review_factory().pk  # queued: the sweeper admits it, it is not stalled

    stalled = set(stalled_rounds())
    assert {
        never_queued,
        worker_died,
        message_lost,
        all_done_advance_lost,
        advance_overdue,
    } <= stalled
    assert not stalled & {coordinator_alive, steps_alive, finished, advance_queued, waiting}


def test_a_batch_records_its_steps_outcomes_together_each_on_its_own_claim(review_factory):
    """run_inline's batch: the steps that ended keep their leases until their outcomes are
    written, each outcome (with its own result) is written only where the step's claim (its
    attempt) still holds, and a step another run took over keeps that run's state."""
    from datetime import timedelta

    from django.utils import timezone

    from reviews.pipeline.step_writes import BatchOutcomes

    review_round = review_factory()
    soon = timezone.now() + timedelta(seconds=5)
    steps = [
        PipelineStep.objects.create(
            round=review_round,
            stage="reviewers",
            key=f"s{index}",
            state="running",
            attempts=1,
            lease_until=soon,
        )
        for index in range(4)
    ]
    taken_over = steps[3]
    outcomes = BatchOutcomes()
    assert outcomes(steps[0], 1, "done", result={"state": "done", "attempt": 1})
    assert outcomes(steps[1], 1, "done", result={"state": "done", "attempt": 2})
    assert outcomes(steps[2], 1, "failed", error="the model refused")
    assert outcomes(taken_over, 1, "done", result={"state": "done"})
    PipelineStep.objects.filter(pk=taken_over.pk).update(attempts=2)  # a second run's claim

    outcomes.renew()  # the ended steps' leases, kept while the batch's slowest runs
    kept = PipelineStep.objects.filter(pk__in=[s.pk for s in steps[:3]])
    assert all(step.lease_until > soon for step in kept)
    assert PipelineStep.objects.get(pk=taken_over.pk).lease_until == soon

    outcomes.write()
    after = {s.pk: s for s in PipelineStep.objects.filter(round=review_round)}
    assert [after[s.pk].state for s in steps] == ["done", "done", "failed", "running"]
    assert after[steps[0].pk].result == {"state": "done", "attempt": 1}
    assert after[steps[1].pk].result == {"state": "done", "attempt": 2}
    assert after[steps[2].pk].error == "the model refused"
    assert all(after[s.pk].lease_until is None for s in steps[:3])
    assert after[taken_over.pk].lease_until == soon
