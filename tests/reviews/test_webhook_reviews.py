"""Webhooks that review (issue 12, must show): a signed GitHub delivery reviews the pull
request with no other action, a push during a round supersedes it, a delivery sent three times
starts one round, and a merged pull request completes the review.

The fake GitHub serves the pull request, its diff and its git objects; deliveries are POSTed to
the live test server with GitHub's real HMAC signature. Reviews are model-less (offline
analyzers only), so rounds finish in seconds.

Both runtimes are shown:
- the full stack: PostgreSQL, Redis and a real Celery worker process;
- the embedded default: no worker, the server process's background runner
  (config/background.py) runs the pipeline in its own threads. The runner chooses its mode by
  REDIS_URL, so the test clears REDIS_URL in this process and keeps PostgreSQL: it runs under
  CI's --require-services too (the embedded default's SQLite is not needed to exercise the
  runner; the test server and the runner are the same code either way).

No sweeper runs in either (it would start a stalled round ~15 s later): what runs a round here
is the webhook's own enqueue.
"""

from __future__ import annotations

import time

import pytest

from config import background
from guardrails.models import AuditEvent
from reviews.models import ReviewRound, ReviewSpace, Verdict
from tests.fakes.github_server import deliver_webhook, pull_request_payload
from workspaces.models import Repository, RepositoryGrant

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SECRET = "webhook-secret-for-tests"
TOKEN = "ghs_server_token"

BASE = {
    "shop/__init__.py": '"""The shop."""\n',
    "shop/prices.py": "def total(p):\n    return sum(p)\n",
}
CHANGE = {
    "shop/prices.py": (
        "import subprocess\n\n\ndef total(p):\n    return sum(p)\n\n\n"
        "def run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
    )
}


@pytest.fixture
def hooked(settings, fake_github, git_repo_factory, workspace, tmp_path, live_server):
    """acme/shop#7 open on the fake GitHub, connected with auto-review; returns a `send`
    that delivers a signed event for the pull request's current state."""
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = fake_github.base_url, TOKEN
    settings.GITHUB_APP_ID = settings.GITHUB_APP_PRIVATE_KEY_PATH = ""
    settings.QUORUM_LLM_PROVIDER = settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    repo = git_repo_factory("shop")
    repo.commit("base", BASE, branch="main")
    repo.commit("a shell helper", CHANGE, branch="feature")
    fake_github.add_token(TOKEN, login="quorum-bot")
    fake_github.add_repo("acme", "shop", repo.path)
    fake_github.add_pull("acme", "shop", 7, base="main", head="feature", author="dev")
    Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/shop", auto_review=True
    )
    RepositoryGrant.objects.create(workspace=workspace, full_name="acme/shop")
    url = live_server.url + "/webhooks/github/"

    def send(action: str, *, delivery: str, merged: bool = False):
        payload = pull_request_payload(fake_github, "acme", "shop", 7, action=action)
        if action == "closed":
            payload["pull_request"].update(state="closed", merged=merged)
        return deliver_webhook(
            url, secret=SECRET.encode(), event="pull_request", payload=payload, delivery_id=delivery
        )

    return send, repo, fake_github


def _wait(predicate, what: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _state(round_id: int) -> str:
    return ReviewRound.objects.get(pk=round_id).state


def _ended(round_id: int) -> ReviewRound | None:
    r = ReviewRound.objects.get(pk=round_id)
    return r if r.state not in ("pending", "running") else None


def _scenario(hooked) -> None:
    send, repo, fake = hooked

    # opened → a round runs to a verdict, with nothing but the delivery.
    opened = send("opened", delivery="d-opened")
    assert opened.status_code == 202, opened.text
    (first_id,) = opened.json()["rounds"]
    first = _wait(lambda: _ended(first_id), "the opened round to end")
    assert first.state == "finished", first.error
    assert first.head_sha == repo.sha("feature")
    assert Verdict.objects.filter(round=first).exists()
    space = ReviewSpace.objects.get()
    assert space.status == "reviewed"

    # A push: the same delivery three times (GitHub's retries) starts one round; a second
    # delivery for the same head (a new delivery id) starts none either.
    repo.commit("tidy", {"shop/util.py": "def double(x):\n    return 2 * x\n"}, branch="feature")
    # The round's first GitHub call meets a secondary rate limit (Retry-After: 4 s), so the
    # round is still running when the next push arrives.
    fake.inject("secondary", seconds=4)
    answers = [send("synchronize", delivery="d-push-1") for _ in range(3)]
    assert [a.status_code for a in answers] == [202, 200, 200]
    assert all("duplicate" in a.json()["detail"] for a in answers[1:])
    (second_id,) = answers[0].json()["rounds"]
    same_head = send("synchronize", delivery="d-push-1-again")
    assert same_head.status_code == 200 and "already" in same_head.json()["detail"]
    assert ReviewRound.objects.count() == 2
    _wait(lambda: _state(second_id) == "running", "the second round to start running")

    # Another push while it runs: the running round is superseded and the new head reviewed.
    repo.commit("more", {"shop/util.py": "def double(x):\n    return x + x\n"}, branch="feature")
    pushed = send("synchronize", delivery="d-push-2")
    assert pushed.status_code == 202, pushed.text
    (third_id,) = pushed.json()["rounds"]
    second = ReviewRound.objects.get(pk=second_id)
    assert second.state == "superseded" and second.superseded_by_id == third_id
    third = _wait(lambda: _ended(third_id), "the new head's round to end")
    assert third.state == "finished", third.error
    assert third.head_sha == repo.sha("feature") != second.head_sha
    assert Verdict.objects.filter(round=third).exists()
    # The superseded round's coordinator woke up, saw it was superseded and let go: it kept
    # its state, got no verdict and recorded no error.
    _wait(
        lambda: (
            not ReviewRound.objects.filter(pk=second_id, lease_until__isnull=False).exists()
            and not second.steps.filter(state__in=("pending", "running")).exists()
        ),
        "the superseded round's work to stop",
        timeout=60,
    )
    time.sleep(1)
    second.refresh_from_db()
    assert second.state == "superseded" and second.error == ""
    assert not Verdict.objects.filter(round=second).exists()
    space.refresh_from_db()
    assert space.status == "reviewed"

    # Merged → the review is completed.
    closed = send("closed", delivery="d-closed", merged=True)
    assert closed.status_code == 200 and "merged" in closed.json()["detail"]
    space.refresh_from_db()
    assert (space.status, space.closed_reason) == ("completed", "merged")

    started = AuditEvent.objects.filter(action="review.requested", actor_kind="system")
    assert sorted(e.payload["round"] for e in started) == [1, 2, 3]
    assert {e.payload["delivery"] for e in started} == {"d-opened", "d-push-1", "d-push-2"}


@pytest.mark.redis
def test_webhooks_review_on_a_celery_worker(
    hooked, worker_factory, fake_github, tmp_path, settings
):
    worker_factory(
        SECRET_KEY=settings.SECRET_KEY,  # one audit chain key for the server and the worker
        GITHUB_API_URL=fake_github.base_url,
        GITHUB_TOKEN=TOKEN,
        GITHUB_APP_ID="",
        GITHUB_APP_PRIVATE_KEY_PATH="",
        QUORUM_LLM_PROVIDER="",
        QUORUM_LLM_MODEL="",
        QUORUM_LLM_BASE_URL="",
        QUORUM_LLM_API_KEY="",
        QUORUM_WORKTREE_ROOT=str(tmp_path / "worktrees"),
        QUORUM_SWEEP_SECONDS="0",
    )
    _scenario(hooked)


@pytest.fixture
def embedded_runner(settings):
    """This process runs background work itself, as the embedded server does."""
    settings.REDIS_URL = ""
    yield
    pool = background._executor
    if pool is not None:  # let every thread finish before the database is flushed
        pool.shutdown(wait=True)
        background._executor = None


def test_webhooks_review_in_the_embedded_runner(hooked, embedded_runner):
    # `embedded_runner` after `hooked`: its teardown waits for the server threads while the
    # fake GitHub they talk to is still up (stopped first, their retries back off for minutes).
    _scenario(hooked)
