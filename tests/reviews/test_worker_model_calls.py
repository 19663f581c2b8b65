"""Model calls on a real Celery worker (PostgreSQL, Redis, the fake model over loopback): one
worker process keeps many calls in flight, no more per provider than its limit, waits out a
429, and stops the calls of a round that a push superseded (reviews/agents/call_limits.py,
reviews/pipeline/model_waits.py)."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection

from reviews.models import ReviewRound
from reviews.services.requests import review_request
from reviews.services.rounds import round_start
from tests.fakes.model_server import Fail, FakeModelServer, RecordedRequest, Script
from tests.reviews import pipeline_scenarios as scenario
from tests.reviews.test_pipeline_celery import _wait_finished
from workspaces.models import Repository

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def _peak_in_flight(requests: list[RecordedRequest]) -> int:
    """The most requests the fake was answering at once."""
    edges = sorted(
        [(r.started, 1) for r in requests] + [(r.ended or r.started, -1) for r in requests],
        key=lambda edge: (edge[0], edge[1]),
    )
    peak = now = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def _repositories(shop, count: int) -> list[Repository]:
    """`count` connected repositories of the sample (one pull request each)."""
    repo = shop[0]
    return [repo] + [
        Repository.objects.create(
            workspace=repo.workspace, kind="local", local_path=repo.local_path + "/." * i
        )
        for i in range(1, count)
    ]


class _Connections:
    """The most connections the worker (by its application name) had open at once."""

    def __init__(self, application: str) -> None:
        self.application, self.peak = application, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        db = connection.settings_dict
        with psycopg.connect(
            host=db["HOST"] or "127.0.0.1",
            port=db["PORT"] or 5432,
            user=db["USER"],
            dbname="postgres",
            autocommit=True,
        ) as conn:
            while not self._stop.wait(0.05):
                (count,) = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                    (self.application,),
                ).fetchone()
                self.peak = max(self.peak, count)

    def __enter__(self) -> _Connections:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_one_worker_process_keeps_many_calls_in_flight_within_the_provider_limit(
    shop, fake_model: FakeModelServer, worker_factory, tmp_path
):
    _, base, head, alice = shop
    scenario.install(fake_model, latency=0.5)
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    # One process, 12 threads: three rounds' reviewers and lenses at once, at most 6 calls out,
    # and a pool of 3 connections, which a thread waiting on the model does not hold.
    worker_factory(
        QUORUM_WORKER_THREADS="12",
        QUORUM_MODEL_CALLS_PER_PROVIDER="6",
        QUORUM_DB_POOL_MAX="3",
        DATABASE_URL=f"{url}?application_name=calls-worker",
    )
    with _Connections("calls-worker") as connections:
        rounds = [
            review_request(repository=repo, actor=alice, base=base, head=head, tier="thorough")
            for repo in _repositories(shop, 3)
        ]
        for review_round in rounds:
            finished = _wait_finished(review_round.pk, logs=tmp_path)
            assert finished.state == "finished", finished.error
    answered = [r for r in fake_model.recorded("openai") if r.status == 200]
    assert len(answered) >= 30
    peak = _peak_in_flight(answered)
    # A prefork worker of one process has one call out at a time (three for a panel step).
    assert 5 <= peak <= 6, peak
    assert 1 <= connections.peak <= 3, connections.peak


def test_a_429_is_waited_out_and_sent_again(shop, fake_model, worker_factory, tmp_path):
    repo, base, head, alice = shop
    scenario.install(fake_model)
    refused: dict[str, float] = {}
    lock = threading.Lock()
    security = fake_model.script_for("fake-reviewer", "", ["You are the security reviewer."])

    def once_refused(conversation):
        # The first request of the run is refused with a Retry-After of 1 s; the same request
        # sent again gets the reviewer's answer.
        with lock:
            first = conversation.turn == 0 and "security" not in refused
            if first:
                refused["security"] = time.monotonic()
        if first:
            return Fail(429, retry_after=1)
        return security.reply_for(conversation)

    fake_model.add_script(
        Script("security-429", tuple([once_refused] * 8)), marker="You are the security reviewer."
    )
    worker_factory()
    review_round = review_request(
        repository=repo, actor=alice, base=base, head=head, tier="thorough"
    )
    finished = _wait_finished(review_round.pk, logs=tmp_path)
    assert finished.state == "finished", finished.error
    security_requests = [r for r in fake_model.recorded("openai") if r.script == "security-429"]
    assert [r.status for r in security_requests[:2]] == [429, 200]
    assert security_requests[1].started - security_requests[0].ended >= 0.9
    stream = finished.streams.get(name="security")
    assert stream.state == "done" and stream.attempts == 1  # no second attempt of the reviewer


def test_a_superseded_round_stops_its_calls(shop, fake_model, worker_factory, tmp_path):
    repo, base, head, alice = shop
    scenario.install(fake_model, latency=4.0)
    worker_factory(QUORUM_STOP_POLL_SECONDS="1")
    review_round = review_request(
        repository=repo, actor=alice, base=base, head=head, tier="thorough"
    )
    deadline = time.monotonic() + 60
    while not [r for r in fake_model.recorded("openai") if not r.ended]:
        assert time.monotonic() < deadline, "no reviewer reached the model"
        time.sleep(0.05)
    time.sleep(0.5)  # every reviewer's first call is out
    superseded_at = time.monotonic()
    round_start(space=review_round.space, head_sha="0" * 40, base_sha=base, tier="thorough")
    assert ReviewRound.objects.get(pk=review_round.pk).state == "superseded"
    # Within the watcher's poll (1 s) and a margin, no step of the old round is still running:
    # each was waiting 4 s for its answer and would have asked again after it.
    deadline = superseded_at + 3.0
    while review_round.steps.filter(state="running").exists():
        assert time.monotonic() < deadline, list(review_round.steps.values("key", "state"))
        time.sleep(0.1)
    stopped_at = time.monotonic()
    time.sleep(4.5)  # past the answers the stopped calls were waiting for
    later = [r for r in fake_model.recorded("openai") if r.started > stopped_at]
    assert later == [], [r.script for r in later]
    assert stopped_at - superseded_at < 3.0


def test_a_finished_rounds_requirements_reviewer_runs_again_without_being_stopped(
    shop, fake_model, worker_factory, tmp_path
):
    from reviews.services.rounds import round_supply_request

    repo, base, head, alice = shop
    scenario.install(fake_model)
    worker_factory(QUORUM_STOP_POLL_SECONDS="1")
    review_round = review_request(
        repository=repo, actor=alice, base=base, head=head, tier="adaptive"
    )
    finished = _wait_finished(review_round.pk, logs=tmp_path)
    assert finished.state == "finished", finished.error
    stream = finished.streams.get(dimension="requirements")
    assert stream.state == "skipped"  # no request to compare the change with
    # Each answer takes longer than the watcher's poll: a watcher that stopped the runs of a
    # finished round would cancel this one mid-call.
    scenario.install(fake_model, latency=2.5)
    round_supply_request(review_round=finished, text="Add search to the shop.", actor=alice)
    deadline = time.monotonic() + 60
    while (current := finished.streams.get(pk=stream.pk)).state != "done":
        assert current.state in ("pending", "running"), (current.state, current.error)
        assert time.monotonic() < deadline, (current.state, current.error)
        time.sleep(0.2)
