"""The check run in both runtimes: a GitHub pull request reviewed by the real pipeline (offline
analyzers only, so a round takes seconds) creates one `Quorum` check run in progress and
completes it with the verdict's conclusion, posted from a task: on a real Celery worker process
(PostgreSQL + Redis), and in the embedded runner's threads (config/background.py)."""

from __future__ import annotations

import time

import pytest

from config import background
from reviews.domain.check_runs import conclusion_for
from reviews.domain.types import VerdictLevel
from reviews.models import ReviewRound, Verdict
from reviews.services.requests import review_request
from tests.fakes.github_server import FakeGitHub
from tests.reviews.test_check_runs import PUBLIC, app_identity
from tests.reviews.test_webhook_reviews import BASE, CHANGE  # the same small shop change
from workspaces.models import Repository

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fake_github():
    fake = FakeGitHub(clock=time.time).start()
    yield fake
    fake.stop()


@pytest.fixture
def shop(settings, fake_github, git_repo_factory, workspace, tmp_path):
    """acme/shop#7 on the fake GitHub, reached as the app; reviews are model-less."""
    app_identity(settings, fake_github, tmp_path)
    settings.QUORUM_PUBLIC_URL = PUBLIC
    settings.QUORUM_LLM_PROVIDER = settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    repo = git_repo_factory("shop")
    repo.commit("base", BASE, branch="main")
    repo.commit("a shell helper", CHANGE, branch="feature")
    fake_github.add_repo("acme", "shop", repo.path)
    fake_github.add_pull("acme", "shop", 7, base="main", head="feature", author="dev")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/shop"
    )
    return repository, repo


def _wait(predicate, what: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _scenario(shop, fake_github, alice) -> None:
    repository, repo = shop
    review_round = review_request(repository=repository, actor=alice, number=7, tier="light")
    finished = _wait(
        lambda: ReviewRound.objects.filter(pk=review_round.pk, state="finished").first(),
        "the round to finish",
    )
    level = VerdictLevel(Verdict.objects.get(round=finished).level)
    run = _wait(
        lambda: next(
            (r for r in fake_github.check_runs("acme", "shop") if r["status"] == "completed"),
            None,
        ),
        "the check run to complete",
    )
    assert run["name"] == "Quorum" and run["head_sha"] == repo.sha("feature")
    assert run["conclusion"] == conclusion_for(level, hold_fails=False)
    assert run["output"]["summary"].startswith("# Review: ")
    assert run["details_url"].startswith(f"{PUBLIC}/w/")
    # It was created in progress when the round started running, and only once.
    time.sleep(1)  # let any sync still queued finish: it must update, not create
    posts = fake_github.requests_to("POST", r"/repos/acme/shop/check-runs")
    assert [p.json["status"] for p in posts] == ["in_progress"]
    assert len(fake_github.check_runs("acme", "shop")) == 1
    assert ReviewRound.objects.get(pk=finished.pk).check_run_id == run["id"]


@pytest.mark.redis
def test_a_round_on_a_celery_worker_posts_one_check_run(
    shop, fake_github, worker_factory, settings, alice
):
    worker_factory(
        SECRET_KEY=settings.SECRET_KEY,
        GITHUB_API_URL=fake_github.base_url,
        GITHUB_TOKEN="",
        GITHUB_APP_ID=settings.GITHUB_APP_ID,
        GITHUB_APP_PRIVATE_KEY_PATH=settings.GITHUB_APP_PRIVATE_KEY_PATH,
        QUORUM_PUBLIC_URL=PUBLIC,
        QUORUM_LLM_PROVIDER="",
        QUORUM_LLM_MODEL="",
        QUORUM_LLM_BASE_URL="",
        QUORUM_LLM_API_KEY="",
        QUORUM_WORKTREE_ROOT=str(settings.QUORUM_WORKTREE_ROOT),
        QUORUM_SWEEP_SECONDS="0",
    )
    _scenario(shop, fake_github, alice)


@pytest.fixture
def embedded_runner(settings):
    """This process runs background work itself, as the embedded server does."""
    settings.REDIS_URL = ""
    yield
    pool = background._executor
    if pool is not None:
        pool.shutdown(wait=True)
        background._executor = None


def test_a_round_in_the_embedded_runner_posts_one_check_run(
    embedded_runner, shop, fake_github, alice
):
    _scenario(shop, fake_github, alice)
