"""A few schemathesis examples per API operation against a live server, so `make test` guards
what the CI step (python -m tests.api_fuzz.live) checks at length: no 5xx, and every response
as documented by /api/v1/openapi.json.

The coverage phase (every boundary of every parameter, ~1500 requests whatever the example
count) is left to the CI step: here it would take a minute on two cores."""

from __future__ import annotations

import subprocess

import pytest

from tests.api_fuzz.live import ROOT, SCHEMA_PATH, st_command

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture
def fuzz_settings(settings, tmp_path):
    # Set before the live server forks, so that it inherits them.
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path / "repos"]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    settings.GITHUB_API_URL = "http://127.0.0.1:9"  # nothing listens: GitHub is never reached
    settings.GITHUB_TOKEN = ""
    settings.GITHUB_APP_ID = ""


@pytest.fixture
def fuzz_queue(queue, settings):
    """Reviews the fuzzer starts are queued where no worker listens, and dropped afterwards."""
    import redis

    yield queue
    redis.Redis.from_url(settings.REDIS_URL).delete(queue)


@pytest.mark.long
def test_schemathesis_finds_no_server_error_or_schema_violation(
    fuzz_settings, fuzz_queue, asgi_server
):
    from tests.api_fuzz.seed import seed

    token = seed()
    result = subprocess.run(
        st_command(asgi_server + SCHEMA_PATH, token, max_examples=5, phases="fuzzing,stateful"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "API Operations" in result.stdout
