"""POST /webhooks/github/: signature, ping, one round per delivery."""

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


# -- issue 12: drafts, repeated heads, closing, archived repositories, installations ----------


def _space():
    from reviews.models import ReviewSpace

    return ReviewSpace.objects.get()


def test_a_draft_is_reviewed_only_where_the_repository_reviews_drafts(hook, client):
    fake, _ = hook
    draft = pull_request_payload(fake, "acme", "web", 9, action="opened")
    draft["pull_request"]["draft"] = True
    refused = _post(client, draft, delivery="d-draft-1")
    assert refused.status_code == 200 and "draft" in refused.json()["detail"]
    assert not ReviewRound.objects.exists()
    Repository.objects.update(review_drafts=True)
    assert _post(client, draft, delivery="d-draft-2").status_code == 202
    assert ReviewRound.objects.count() == 1


def test_a_second_delivery_for_the_same_head_starts_no_round(hook, client):
    fake, _ = hook
    payload = pull_request_payload(fake, "acme", "web", 9, action="opened")
    assert _post(client, payload, delivery="first").status_code == 202
    again = _post(client, {**payload, "action": "synchronize"}, delivery="second")
    assert again.status_code == 200
    assert "already pending in round 1" in again.json()["detail"]
    ReviewRound.objects.update(state="finished")
    third = _post(client, {**payload, "action": "reopened"}, delivery="third")
    assert third.status_code == 200 and "already finished" in third.json()["detail"]
    assert ReviewRound.objects.count() == 1


def test_a_push_supersedes_the_open_round(hook, client):
    fake, repo = hook
    opened = pull_request_payload(fake, "acme", "web", 9, action="opened")
    assert _post(client, opened).status_code == 202
    repo.commit("more", {"a.py": "x = 3\n"}, branch="feature")
    pushed = _post(
        client, pull_request_payload(fake, "acme", "web", 9, action="synchronize"), delivery="p"
    )
    assert pushed.status_code == 202
    first, second = ReviewRound.objects.order_by("number")
    assert (first.state, first.superseded_by_id) == ("superseded", second.pk)
    assert second.head_sha == repo.sha("feature") and second.state == "pending"


def test_closing_completes_the_review_and_cancels_its_open_round(hook, client):
    from guardrails.models import AuditEvent

    fake, _ = hook
    _post(client, pull_request_payload(fake, "acme", "web", 9, action="opened"))
    closed = pull_request_payload(fake, "acme", "web", 9, action="closed")
    closed["pull_request"].update(state="closed", merged=False)
    response = _post(client, closed, delivery="d-closed")
    assert response.status_code == 200 and "closed" in response.json()["detail"]
    space = _space()
    assert (space.status, space.closed_reason) == ("completed", "closed")
    cancelled = ReviewRound.objects.get()
    assert cancelled.state == "cancelled"
    assert cancelled.error == "Cancelled: the pull request was closed on GitHub."
    assert AuditEvent.objects.filter(action="review.cancelled", actor_kind="system").exists()


def test_reopening_with_the_same_head_reopens_the_review_without_a_new_round(hook, client):
    fake, _ = hook
    _post(client, pull_request_payload(fake, "acme", "web", 9, action="opened"))
    ReviewRound.objects.update(state="finished")
    closed = pull_request_payload(fake, "acme", "web", 9, action="closed")
    closed["pull_request"].update(state="closed", merged=True)
    _post(client, closed, delivery="d-merged")
    assert (_space().status, _space().closed_reason) == ("completed", "merged")
    reopened = _post(
        client, pull_request_payload(fake, "acme", "web", 9, action="reopened"), delivery="d-re"
    )
    assert reopened.status_code == 200 and "reopened" in reopened.json()["detail"]
    assert (_space().status, _space().closed_reason) == ("reviewed", "")
    assert ReviewRound.objects.count() == 1


def test_a_closed_pull_request_nobody_reviewed_changes_nothing(hook, client):
    fake, _ = hook
    closed = pull_request_payload(fake, "acme", "web", 9, action="closed")
    response = _post(client, closed, delivery="d-closed")
    assert response.status_code == 200 and "no review" in response.json()["detail"]


def test_an_archived_repository_is_ignored_with_202_and_the_reason(hook, client):
    from django.utils import timezone

    fake, _ = hook
    Repository.objects.update(archived_at=timezone.now())
    response = _post(client, pull_request_payload(fake, "acme", "web", 9, action="opened"))
    assert response.status_code == 202
    assert "disconnected" in response.json()["detail"] and response.json()["rounds"] == []
    assert not ReviewRound.objects.exists()
    assert "disconnected" in WebhookDelivery.objects.get().outcome


def _installation_payload(action, *, repos=(), account="acme", installation_id=41):
    return {
        "action": action,
        "installation": {"id": installation_id, "account": {"login": account}},
        "repositories": [{"full_name": name} for name in repos],
        "sender": {"login": "octo"},
    }


@pytest.fixture
def installed(workspace):
    from workspaces.models import GitHubInstallation

    GitHubInstallation.objects.create(installation_id=41, account_login="acme", workspace=workspace)
    for name in ("acme/web", "acme/api", "other/lib"):
        Repository.objects.create(workspace=workspace, kind="github", full_name=name)


def test_repositories_removed_from_the_installation_are_archived(settings, client, installed):
    from guardrails.models import AuditEvent

    settings.GITHUB_WEBHOOK_SECRET = SECRET
    payload = {
        "action": "removed",
        "installation": {"id": 41, "account": {"login": "acme"}},
        "repositories_added": [],
        "repositories_removed": [{"full_name": "acme/api"}],
    }
    response = _post(client, payload, event="installation_repositories", delivery="i-1")
    assert response.status_code == 200 and "archived acme/api" in response.json()["detail"]
    archived = set(
        Repository.objects.filter(archived_at__isnull=False).values_list("full_name", flat=True)
    )
    assert archived == {"acme/api"}
    event = AuditEvent.objects.get(action="github.installation_repositories_removed")
    assert event.actor_kind == "system" and event.payload["archived"] == ["acme/api"]
    assert AuditEvent.objects.filter(action="repositories.archived", actor_kind="system").exists()


def test_added_repositories_are_listed_but_not_connected(settings, client, installed):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    payload = {
        "action": "added",
        "installation": {"id": 41, "account": {"login": "acme"}},
        "repositories_added": [{"full_name": "acme/new"}],
        "repositories_removed": [],
    }
    response = _post(client, payload, event="installation_repositories", delivery="i-2")
    assert response.status_code == 200 and "may now be connected" in response.json()["detail"]
    assert not Repository.objects.filter(full_name="acme/new").exists()


def test_a_deleted_installation_is_unbound_and_its_repositories_archived(
    settings, client, installed
):
    from workspaces.models import GitHubInstallation

    settings.GITHUB_WEBHOOK_SECRET = SECRET
    payload = _installation_payload("deleted", repos=["acme/web", "acme/api"])
    response = _post(client, payload, event="installation", delivery="i-3")
    assert response.status_code == 200 and "unbound" in response.json()["detail"]
    assert not GitHubInstallation.objects.exists()
    archived = set(
        Repository.objects.filter(archived_at__isnull=False).values_list("full_name", flat=True)
    )
    assert archived == {"acme/web", "acme/api"}
    # Its webhooks no longer reach the workspace (GitHub App mode: tenancy by installation).
    again = _post(client, _installation_payload("suspend"), event="installation", delivery="i-4")
    assert "not bound" in again.json()["detail"]


def test_an_unbound_installation_changes_nothing(settings, client, workspace):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    Repository.objects.create(workspace=workspace, kind="github", full_name="acme/web")
    payload = _installation_payload("deleted", repos=["acme/web"])
    response = _post(client, payload, event="installation", delivery="i-5")
    assert response.status_code == 200 and "not bound" in response.json()["detail"]
    assert not Repository.objects.filter(archived_at__isnull=False).exists()
