"""Rounds admitted a bounded number at once, in the order they came, on PostgreSQL + Redis with
real Celery workers; and the sweeper telling a coordinator's message still queued from a lost
one (reviews/pipeline/admission.py, reviews/domain/admission.py)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
import redis
from django.db import connections
from django.utils import timezone

from config.celery import app as celery_app
from reviews.domain.admission import DISPATCH_GRACE_SECONDS
from reviews.models import PipelineStep, ReviewRound
from reviews.pipeline.runner import queue_dispatch, recover, stalled_rounds
from reviews.services.requests import review_request
from reviews.services.rounds import round_cancel
from tests.reviews import pipeline_scenarios as scenario
from tests.reviews.test_pipeline_celery import _wait_finished
from tests.reviews.test_pipeline_faults import broker, private_redis  # noqa: F401 (fixtures)
from workspaces.models import Repository

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def _repositories(repo: Repository, count: int) -> list[Repository]:
    """The same checkout connected `count` times: one review space (pull request) each."""
    return [repo] + [
        Repository.objects.create(
            workspace=repo.workspace, kind="local", local_path=repo.local_path + "/." * n
        )
        for n in range(1, count)
    ]


class RunningWatch:
    """Samples, from a thread of its own, how many rounds run at once."""

    def __init__(self) -> None:
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RunningWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.05):
                running = ReviewRound.objects.filter(state="running").count()
                self.most = max(self.most, running)
        finally:
            connections.close_all()


def test_rounds_run_one_at_a_time_in_the_order_they_came(shop, fake_model, worker_factory):
    """A bound of 1 and a worker with 4 slots: the rounds finish in the order they were
    requested, never two run at once, and the waiting ones show as queued (pending) meanwhile;
    a waiting round cancelled and a running one cancelled leave the others to finish."""
    repo, base, head, alice = shop
    scenario.install(fake_model, latency=0.3)
    worker_factory(QUORUM_ROUNDS_AT_ONCE="1")
    repos = _repositories(repo, 5)
    with RunningWatch() as watch:
        rounds = [
            review_request(repository=r, actor=alice, base=base, head=head, tier="thorough")
            for r in repos
        ]
        deadline = time.monotonic() + 60
        while not ReviewRound.objects.filter(pk=rounds[0].pk, state="running").exists():
            assert time.monotonic() < deadline, "the first round never started"
            time.sleep(0.05)
        # The others wait their turn, queued: not failed, not running.
        assert set(
            ReviewRound.objects.filter(pk__in=[r.pk for r in rounds[1:]]).values_list(
                "state", flat=True
            )
        ) == {"pending"}
        # A waiting round is cancelled as any queued round is.
        round_cancel(review_round=rounds[3], actor=alice)
        # The running one cancelled: its place goes to the oldest waiting round.
        round_cancel(review_round=ReviewRound.objects.get(pk=rounds[0].pk), actor=alice)
        ended = [_wait_finished(r.pk, timeout=240) for r in (rounds[1], rounds[2], rounds[4])]
    assert [r.state for r in ended] == ["finished"] * 3, [r.error for r in ended]
    assert ended[0].finished_at < ended[1].finished_at < ended[2].finished_at
    assert watch.most == 1
    assert ReviewRound.objects.get(pk=rounds[3].pk).state == "cancelled"
    assert ReviewRound.objects.get(pk=rounds[0].pk).state == "cancelled"


def test_a_queued_coordinator_message_is_left_alone_and_a_lost_one_sent_again(
    broker,  # noqa: F811 (the fixture)
    review_factory,
    settings,
):
    """No worker takes from the private broker: a coordinator's message stays queued. The
    sweeper does not send it again; once the broker lost it (a restart without persistence)
    and the grace is over, it does."""
    settings.QUORUM_STEP_LEASE_SECONDS = 60
    queue = celery_app.conf.task_default_queue
    client = redis.Redis.from_url(broker.url)
    review_round = review_factory()
    ReviewRound.objects.filter(pk=review_round.pk).update(state="running", stage="reviewers")
    PipelineStep.objects.create(round=review_round, stage="reviewers", key="a", state="done")
    # Its last step ended and asked for the coordinator.
    queue_dispatch("advance", review_round.pk)
    assert client.llen(queue) == 1
    assert ReviewRound.objects.get(pk=review_round.pk).advance_sent_at is not None

    assert stalled_rounds() == []
    assert recover() == 0
    assert client.llen(queue) == 1  # not sent a second time

    # Behind a long queue (forty steps of another round waiting for a worker), a message that
    # waited well past the idle grace still waits its turn.
    other = review_factory()
    ReviewRound.objects.filter(pk=other.pk).update(state="running", stage="reviewers")
    ReviewRound.objects.filter(pk=other.pk).update(
        lease_until=timezone.now() + timedelta(seconds=60)
    )
    PipelineStep.objects.bulk_create(
        PipelineStep(round=other, stage="reviewers", key=f"s{n}") for n in range(40)
    )
    ReviewRound.objects.filter(pk=review_round.pk).update(
        advance_sent_at=timezone.now() - timedelta(seconds=3 * DISPATCH_GRACE_SECONDS)
    )
    assert stalled_rounds() == []

    # The broker loses its data; the queue is short again and the message overdue.
    client.flushall()
    PipelineStep.objects.filter(round=other).update(state="done")
    assert stalled_rounds() == [review_round.pk]
    assert recover() == 1
    assert client.llen(queue) == 1
    assert stalled_rounds() == []  # sent again, and stamped: queued once more


def test_a_round_that_never_had_a_message_is_recovered_at_once(review_factory, settings):
    """Admitted, its coordinator's message never published (nothing stamped): stalled at the
    first look. A round waiting for a place is not stalled: the sweeper admits it."""
    settings.QUORUM_ROUNDS_AT_ONCE = 1
    sent: list[tuple[str, int]] = []
    admitted, waiting = review_factory(), review_factory()
    ReviewRound.objects.filter(pk=admitted.pk).update(state="running")
    assert stalled_rounds() == [admitted.pk]
    assert recover(dispatch=lambda kind, pk: sent.append((kind, pk))) == 1
    assert sent == [("advance", admitted.pk)]
    assert ReviewRound.objects.get(pk=waiting.pk).state == "pending"
    ReviewRound.objects.filter(pk=admitted.pk).update(state="finished")
    sent.clear()
    assert recover(dispatch=lambda kind, pk: sent.append((kind, pk))) == 1
    assert sent == [("advance", waiting.pk)]
    assert ReviewRound.objects.get(pk=waiting.pk).state == "running"


def test_a_push_keeps_the_pull_requests_place_in_line(review_factory, workspace_factory, settings):
    """The round a push starts replaces one that had started: it is admitted before rounds
    of other pull requests that came after that one."""
    settings.QUORUM_ROUNDS_AT_ONCE = 1
    sent: list[tuple[str, int]] = []
    workspace = workspace_factory()
    first = review_factory(workspace)
    ReviewRound.objects.filter(pk=first.pk).update(state="running", stage="reviewers")
    other = review_factory()  # another pull request, waiting
    pushed = review_factory(workspace, head_sha="c" * 40)  # supersedes `first`
    assert ReviewRound.objects.get(pk=first.pk).state == "superseded"
    assert recover(dispatch=lambda kind, pk: sent.append((kind, pk))) == 1
    assert sent == [("advance", pushed.pk)]
    assert ReviewRound.objects.get(pk=other.pk).state == "pending"


def test_a_message_taken_clears_its_stamp_not_a_later_ones(review_factory):
    """Two coordinators' messages in flight for one round: taking the first leaves the round
    counted as queued until the second is taken."""
    from reviews.pipeline.admission import advance_sent, advance_taken

    review_round = review_factory()
    first = advance_sent(review_round.pk)
    second = advance_sent(review_round.pk)
    advance_taken(review_round.pk, first)
    assert ReviewRound.objects.get(pk=review_round.pk).advance_sent_at == second
    advance_taken(review_round.pk, second)
    assert ReviewRound.objects.get(pk=review_round.pk).advance_sent_at is None
