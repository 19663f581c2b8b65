"""Filing an issue with the client's create_issue against the fake's POST /repos/{o}/{r}/issues,
which answers as GitHub does (201, 422, 404, 410, 401)."""

from __future__ import annotations

import httpx
import pytest

from reviews.sources.github_auth import StaticToken
from reviews.sources.github_client import (
    GitHubAuthError,
    GitHubClient,
    GitHubError,
    GitHubNotFound,
    GitHubUnavailable,
    GitHubValidationError,
)

TOKEN = "ghp_issue_token"


@pytest.fixture
def github(fake_github, git_repo_factory):
    repo = git_repo_factory()
    repo.commit("base", {"a.py": "one\n"}, branch="main")
    repo.commit("change", {"a.py": "two\n"}, branch="feature")
    fake_github.add_token(TOKEN, login="quorum[bot]")
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull("acme", "app", 5, base="main", head="feature", author="bob")
    return fake_github


def _client(fake, clock, token: str = TOKEN) -> GitHubClient:
    return GitHubClient(
        StaticToken(token), base_url=fake.base_url, sleep=clock.sleep, clock=clock.time
    )


def _raw(fake, json_body, token: str = TOKEN) -> httpx.Response:
    return httpx.post(
        f"{fake.base_url}/repos/acme/app/issues",
        json=json_body,
        headers={"Authorization": f"Bearer {token}", "User-Agent": "test"},
    )


def test_an_issue_is_created_with_the_next_number(github, fake_clock):
    issue = _client(github, fake_clock).create_issue("acme", "app", title="Do it", body="Why.")
    # Issues share numbers with pull requests: #5 exists, so this is #6.
    assert issue["number"] == 6 and issue["state"] == "open"
    assert (issue["title"], issue["body"]) == ("Do it", "Why.")
    assert issue["html_url"] == f"{github.base_url}/acme/app/issues/6"
    assert issue["user"]["login"] == "quorum[bot]"
    assert github.issues("acme", "app") == [issue]
    [sent] = github.requests_to("POST", r"/repos/acme/app/issues")
    assert sent.status == 201 and sent.headers["authorization"] == f"Bearer {TOKEN}"


def test_a_missing_or_empty_title_is_refused_with_githubs_422(github, fake_clock):
    missing = _raw(github, {"body": "no title"})
    assert missing.status_code == 422
    assert missing.json()["message"] == 'Invalid request.\n\n"title" wasn\'t supplied.'
    with pytest.raises(GitHubValidationError) as caught:
        _client(github, fake_clock).create_issue("acme", "app", title="  ", body="x")
    assert caught.value.status == 422 and caught.value.retryable is False
    assert caught.value.errors == [{"resource": "Issue", "code": "missing_field", "field": "title"}]
    too_long = _raw(github, {"title": "x" * 257})
    assert too_long.status_code == 422 and "title is too long" in str(too_long.json())
    assert github.issues("acme", "app") == []


def test_an_unknown_repository_is_404(github, fake_clock):
    with pytest.raises(GitHubNotFound):
        _client(github, fake_clock).create_issue("acme", "nothing", title="t", body="")


def test_issues_turned_off_is_410(github, fake_clock):
    github.repos[("acme", "app")].has_issues = False
    with pytest.raises(GitHubError) as caught:
        _client(github, fake_clock).create_issue("acme", "app", title="t", body="")
    assert caught.value.status == 410
    assert "Issues are disabled for this repo" in str(caught.value)
    assert github.issues("acme", "app") == []


def test_bad_credentials_are_401(github, fake_clock):
    with pytest.raises(GitHubAuthError):
        _client(github, fake_clock, token="ghp_wrong").create_issue(
            "acme", "app", title="t", body=""
        )
    assert github.issues("acme", "app") == []


def test_an_issue_is_never_sent_twice_after_a_server_error(github, fake_clock):
    github.inject("502")
    with pytest.raises(GitHubUnavailable) as caught:
        _client(github, fake_clock).create_issue("acme", "app", title="t", body="")
    assert caught.value.maybe_applied is True
    assert len(github.requests_to("POST", r"/repos/acme/app/issues")) == 1
