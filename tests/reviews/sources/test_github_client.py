"""GitHubClient against the fake GitHub: headers, app tokens, rate limits, retries, errors."""

from __future__ import annotations

import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from reviews.sources.github_auth import GitHubApp, StaticToken
from reviews.sources.github_client import (
    DiffTooLarge,
    GitHubAuthError,
    GitHubClient,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubUnavailable,
    GitHubValidationError,
)
from tests.fakes.github_server import LINE_NOT_IN_DIFF

TOKEN = "ghp_static_token"


@pytest.fixture(scope="module")
def app_keys():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


@pytest.fixture
def github(fake_github, git_repo_factory):
    """The fake with one repository and PR #5 (bob's), and a static token for alice."""
    repo = git_repo_factory()
    repo.commit("base", {"a.py": "one\ntwo\nthree\n"}, branch="main")
    repo.commit("change", {"a.py": "one\nTWO\nthree\n"}, branch="feature")
    fake_github.add_token(TOKEN, login="alice")
    fake_github.add_repo("acme", "app", repo.path, installation_id=42)
    fake_github.add_pull("acme", "app", 5, base="main", head="feature", author="bob")
    fake_github.repo = repo
    return fake_github


def make_client(fake, clock, **kwargs):
    kwargs.setdefault("auth", StaticToken(TOKEN))
    return GitHubClient(base_url=fake.base_url, sleep=clock.sleep, clock=clock.time, **kwargs)


def test_it_sends_the_headers_github_requires(github, fake_clock):
    """Accept, API version, User-Agent and a Bearer token on every request."""
    pull = make_client(github, fake_clock).get_pull("acme", "app", 5)
    assert pull["number"] == 5 and pull["user"]["login"] == "bob"
    headers = github.requests[-1].headers
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["x-github-api-version"] == "2022-11-28"
    assert headers["user-agent"]
    assert headers["authorization"] == f"Bearer {TOKEN}"


def test_it_fetches_an_app_token_caches_it_and_refreshes_it_when_expired(
    github, fake_clock, app_keys
):
    """JWT → installation → token; reused while fresh; fetched again near expiry."""
    private, public = app_keys
    github.configure_app(1234, public, slug="quorum")
    app = GitHubApp(1234, private, clock=fake_clock.time)
    client = make_client(github, fake_clock, auth=app)

    client.get_pull("acme", "app", 5)
    client.get_pull("acme", "app", 5)
    assert len(github.requests_to("GET", "/repos/acme/app/installation")) == 1
    assert len(github.requests_to("POST", "/app/installations/42/access_tokens")) == 1
    first_token = github.installation_tokens[0]
    assert github.requests[-1].headers["authorization"] == f"Bearer {first_token}"
    claims = jwt.decode(
        github.requests_to("POST", r"/app/installations/\d+/access_tokens")[0].headers[
            "authorization"
        ][7:],
        public,
        algorithms=["RS256"],
        options={"verify_exp": False, "verify_iat": False},
    )
    now = int(fake_clock.time())
    assert (claims["iat"], claims["exp"], claims["iss"]) == (now - 60, now + 540, "1234")

    fake_clock.advance(56 * 60)  # inside the 5-minute margin before the hour is up
    client.get_pull("acme", "app", 5)
    assert len(github.requests_to("POST", "/app/installations/42/access_tokens")) == 2
    second_token = github.installation_tokens[1]
    assert second_token != first_token
    assert github.requests[-1].headers["authorization"] == f"Bearer {second_token}"


def test_it_replaces_an_app_token_the_server_revoked(github, fake_clock, app_keys):
    """A cached token answered with 401 is dropped and a new one fetched, once."""
    private, public = app_keys
    github.configure_app(1234, public, slug="quorum")
    client = make_client(github, fake_clock, auth=GitHubApp(1234, private, clock=fake_clock.time))
    client.get_pull("acme", "app", 5)
    github.revoke_installation_tokens()
    assert client.get_pull("acme", "app", 5)["number"] == 5
    assert len(github.requests_to("POST", "/app/installations/42/access_tokens")) == 2
    assert [r.status for r in github.requests_to("GET", "/repos/acme/app/pulls/5")] == [
        200,
        401,
        200,
    ]


def test_it_reports_an_app_key_github_does_not_accept(github, fake_clock, app_keys):
    """A JWT signed with another key is a non-retryable GitHubAuthError."""
    _, public = app_keys
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    github.configure_app(1234, public, slug="quorum")
    client = make_client(github, fake_clock, auth=GitHubApp(1234, other, clock=fake_clock.time))
    with pytest.raises(GitHubAuthError) as caught:
        client.get_pull("acme", "app", 5)
    assert caught.value.retryable is False
    assert github.requests[-1].json is None and github.requests[-1].status == 401


def test_it_waits_out_a_secondary_rate_limit_with_retry_after(github, fake_clock):
    """403 + Retry-After: the client sleeps exactly that long and retries."""
    github.inject("secondary", seconds=37)
    pull = make_client(github, fake_clock).get_pull("acme", "app", 5)
    assert pull["number"] == 5
    assert fake_clock.sleeps == [37.0]
    assert [r.status for r in github.requests] == [403, 200]


def test_it_backs_off_from_a_secondary_limit_without_headers(github, fake_clock):
    """No Retry-After, remaining not 0: at least 60 s, doubling."""
    github.inject("secondary_bare", count=2)
    make_client(github, fake_clock).get_pull("acme", "app", 5)
    assert fake_clock.sleeps == [60.0, 120.0]


def test_it_waits_until_the_primary_limit_resets(github, fake_clock):
    """403 with remaining 0 and no Retry-After: sleep until x-ratelimit-reset."""
    github.inject("primary", seconds=120)
    make_client(github, fake_clock).get_pull("acme", "app", 5)
    assert len(fake_clock.sleeps) == 1 and 120 <= fake_clock.sleeps[0] <= 122


def test_it_gives_up_after_the_configured_attempts(github, fake_clock):
    """Still limited after max_attempts: a retryable GitHubRateLimited, no endless loop."""
    github.inject("429", count=10, seconds=5)
    client = make_client(github, fake_clock, max_attempts=3)
    with pytest.raises(GitHubRateLimited) as caught:
        client.get_pull("acme", "app", 5)
    assert caught.value.retryable is True
    assert caught.value.retry_at is not None
    assert fake_clock.sleeps == [5.0, 5.0]
    assert len(github.requests) == 3


def test_it_does_not_sleep_longer_than_allowed(github, fake_clock):
    """A reset an hour away is raised (with retry_at) instead of blocking a worker."""
    github.inject("primary", seconds=3600)
    client = make_client(github, fake_clock, max_wait=600)
    with pytest.raises(GitHubRateLimited) as caught:
        client.get_pull("acme", "app", 5)
    assert fake_clock.sleeps == []
    assert caught.value.retry_at >= fake_clock.time() + 3600


def test_it_retries_server_errors_a_bounded_number_of_times(github, fake_clock):
    """502/503 on a read are retried with backoff; past the bound it is GitHubUnavailable."""
    github.inject("502")
    github.inject("503")
    assert make_client(github, fake_clock).get_pull("acme", "app", 5)["number"] == 5
    assert fake_clock.sleeps == [1.0, 2.0]
    github.inject("500", count=5)
    with pytest.raises(GitHubUnavailable) as caught:
        make_client(github, fake_clock, max_attempts=2).get_pull("acme", "app", 5)
    assert caught.value.retryable is True and caught.value.status == 500


def test_it_does_not_resend_a_review_after_a_server_error(github, fake_clock):
    """A 5xx on creating a review may have posted it: raise, flagged maybe_applied."""
    github.inject("502")
    client = make_client(github, fake_clock)
    with pytest.raises(GitHubUnavailable) as caught:
        client.create_review(
            "acme", "app", 5, commit_id=github.repo.sha("feature"), body="x", event="COMMENT"
        )
    assert caught.value.maybe_applied is True
    assert len(github.requests_to("POST", r"/repos/acme/app/pulls/5/reviews")) == 1


def test_it_retries_a_review_after_a_rate_limit(github, fake_clock):
    """A rate-limit answer means nothing was created, so even a review is sent again."""
    github.inject("secondary", seconds=61)
    client = make_client(github, fake_clock)
    client.create_review(
        "acme", "app", 5, commit_id=github.repo.sha("feature"), body="x", event="COMMENT"
    )
    assert fake_clock.sleeps == [61.0]
    assert len(github.reviews("acme", "app", 5)) == 1


def test_it_raises_validation_errors_with_githubs_list(github, fake_clock):
    """A 422 becomes GitHubValidationError carrying the errors list verbatim, not retryable."""
    client = make_client(github, fake_clock)
    with pytest.raises(GitHubValidationError) as caught:
        client.create_review(
            "acme",
            "app",
            5,
            commit_id=github.repo.sha("feature"),
            body="x",
            event="COMMENT",
            comments=[{"path": "a.py", "line": 99, "side": "RIGHT", "body": "far away"}],
        )
    assert caught.value.status == 422
    assert caught.value.errors == [LINE_NOT_IN_DIFF]
    assert caught.value.retryable is False
    assert github.reviews("acme", "app", 5) == []


def test_it_pages_through_files(fake_github, git_repo_factory, fake_clock):
    """250 files come back over 3 pages of 100, following Link rel=next."""
    repo = git_repo_factory()
    repo.commit("base", {"README": "x\n"}, branch="main")
    repo.commit("many", {f"f/{i:03}.txt": f"{i}\n" for i in range(250)}, branch="feature")
    fake_github.add_token(TOKEN)
    fake_github.add_repo("acme", "big", repo.path)
    fake_github.add_pull("acme", "big", 1, base="main", head="feature")
    files = make_client(fake_github, fake_clock).list_pull_files("acme", "big", 1)
    assert [f["filename"] for f in files] == [f"f/{i:03}.txt" for i in range(250)]
    pages = fake_github.requests_to("GET", "/repos/acme/big/pulls/1/files")
    assert len(pages) == 3
    assert [r.query.get("page", ["1"])[0] for r in pages] == ["1", "2", "3"]
    assert all(r.query["per_page"] == ["100"] for r in pages)


def test_it_reads_the_diff_and_signals_when_it_is_too_large(github, fake_clock):
    """The diff media type gives text; a 406 too_large is DiffTooLarge for a local fallback."""
    client = make_client(github, fake_clock)
    text = client.get_pull_diff("acme", "app", 5)
    assert text.startswith("diff --git a/a.py b/a.py")
    assert github.requests[-1].headers["accept"] == "application/vnd.github.diff"
    github.diff_file_limit = 0
    with pytest.raises(DiffTooLarge) as caught:
        client.get_pull_diff("acme", "app", 5)
    assert caught.value.errors[0]["code"] == "too_large"


def test_it_reports_missing_things_and_bad_credentials(github, fake_clock):
    """404 is GitHubNotFound; a refused token is GitHubAuthError; neither is retryable."""
    with pytest.raises(GitHubNotFound) as missing:
        make_client(github, fake_clock).get_pull("acme", "app", 999)
    assert missing.value.retryable is False
    with pytest.raises(GitHubAuthError) as refused:
        make_client(github, fake_clock, auth=StaticToken("nope")).get_pull("acme", "app", 5)
    assert refused.value.retryable is False
    assert "nope" not in str(refused.value)


def test_it_refuses_names_that_would_change_the_url(github, fake_clock):
    """Owner/repo/number are validated before they become part of a URL."""
    client = make_client(github, fake_clock)
    for owner, repo, number in [("..", "app", 5), ("acme", "a/b", 5), ("acme", "app", 0)]:
        with pytest.raises(ValueError):
            client.get_pull(owner, repo, number)
    assert github.requests == []


def test_it_really_sleeps_by_default_only_when_told_to(github):
    """Without an injected sleep the client uses time.sleep (smoke check, no faults)."""
    start = time.monotonic()
    GitHubClient(StaticToken(TOKEN), base_url=github.base_url).get_pull("acme", "app", 5)
    assert time.monotonic() - start < 5
