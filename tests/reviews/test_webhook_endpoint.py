"""POST /webhooks/github/: signature, ping, one round per delivery (issue: sources §4)."""

from __future__ import annotations

import json
import logging

import pytest

from reviews.models import PullRequest, ReviewRound, WebhookDelivery
from tests.fakes.github_server import pull_request_payload, sign
from workspaces.models import Repository, RepositoryGrant

SECRET = "It's a Secret to Everybody"


@pytest.fixture
def hook(settings, fake_github, git_repo_factory, workspace):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    repo = git_repo_factory()
    repo.commit("base", {"a.py": "x = 1\n"}, branch="main")
    repo.commit("change", {"a.py": "x = 2\n"}, branch="feature")
    fake_github.add_token("t", login="octo")
    fake_github.add_repo("acme", "web", repo.path)
    fake_github.add_pull(
        "acme",
        "web",
        9,
        base="main",
        head="feature",
        author="dev",
        title="Tweak",
        body="Please review",
    )
    Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/web", auto_review=True
    )
    RepositoryGrant.objects.create(workspace=workspace, full_name="acme/web")
    return fake_github, repo


def _post(client, payload, *, event="pull_request", delivery="d-1", secret=SECRET, signature=None):
    body = json.dumps(payload).encode()
    return client.post(
        "/webhooks/github/",
        body,
        content_type="application/json",
        HTTP_X_GITHUB_EVENT=event,
        HTTP_X_GITHUB_DELIVERY=delivery,
        HTTP_X_HUB_SIGNATURE_256=signature or sign(secret.encode(), body),
    )


def test_a_signed_opened_event_queues_one_round(hook, client, workspace):
    fake, repo = hook
    response = _post(client, pull_request_payload(fake, "acme", "web", 9, action="opened"))
    assert response.status_code == 202
    review_round = ReviewRound.objects.get()
    assert review_round.head_sha == repo.sha("feature")
    assert review_round.tier == workspace.tier and review_round.state == "pending"
    pr = PullRequest.objects.get()
    assert (pr.number, pr.title, pr.body, pr.author) == (9, "Tweak", "Please review", "dev")


def test_the_same_delivery_twice_queues_one_round(hook, client):
    fake, _ = hook
    payload = pull_request_payload(fake, "acme", "web", 9, action="synchronize")
    assert _post(client, payload, delivery="same").status_code == 202
    again = _post(client, payload, delivery="same")
    assert again.status_code == 200 and "duplicate" in again.json()["detail"]
    assert ReviewRound.objects.count() == 1


def test_a_bad_signature_is_refused_and_changes_nothing(hook, client):
    fake, _ = hook
    payload = pull_request_payload(fake, "acme", "web", 9, action="opened")
    assert _post(client, payload, secret="wrong secret").status_code == 401
    assert _post(client, payload, signature="sha256=" + "0" * 64).status_code == 401
    body = json.dumps(payload).encode()
    unsigned = client.post(
        "/webhooks/github/",
        body,
        content_type="application/json",
        HTTP_X_GITHUB_EVENT="pull_request",
        HTTP_X_GITHUB_DELIVERY="x",
    )
    assert unsigned.status_code == 401
    assert not ReviewRound.objects.exists() and not WebhookDelivery.objects.exists()


def test_an_unknown_repository_is_ignored_with_2xx_and_a_log_line(hook, client, caplog):
    fake, _ = hook
    payload = pull_request_payload(fake, "acme", "web", 9, action="opened")
    payload["repository"]["full_name"] = "acme/unknown"
    with caplog.at_level(logging.INFO, logger="reviews.services.webhooks"):
        response = _post(client, payload)
    assert response.status_code == 200
    assert "acme/unknown is not connected" in caplog.text
    assert not ReviewRound.objects.exists()


def test_ping_drafts_and_closed_events_start_nothing(hook, client):
    fake, _ = hook
    assert _post(client, {"zen": "Keep it logically awesome."}, event="ping").json() == {
        "detail": "pong"
    }
    draft = pull_request_payload(fake, "acme", "web", 9, action="opened")
    draft["pull_request"]["draft"] = True
    assert _post(client, draft, delivery="d-draft").status_code == 200
    closed = pull_request_payload(fake, "acme", "web", 9, action="closed")
    assert _post(client, closed, delivery="d-closed").status_code == 200
    assert not ReviewRound.objects.exists()


def test_a_repository_without_auto_review_is_ignored(hook, client):
    fake, _ = hook
    Repository.objects.update(auto_review=False)
    response = _post(client, pull_request_payload(fake, "acme", "web", 9, action="opened"))
    assert response.status_code == 200
    assert not ReviewRound.objects.exists()


def test_webhooks_are_refused_when_no_secret_is_configured(settings, client, db):
    settings.GITHUB_WEBHOOK_SECRET = ""
    response = client.post("/webhooks/github/", b"{}", content_type="application/json")
    assert response.status_code == 503
