"""Personal API tokens: shown once, stored hashed, revocable."""

from __future__ import annotations

import re

import pytest

from guardrails.models import AuditEvent
from workspaces.models import ApiToken


def _create(client, name="ci"):
    html = client.post("/account/tokens/", {"action": "create", "name": name}).content.decode()
    return re.search(r'<code class="secret">(qrm_[^<]+)</code>', html).group(1)


def test_it_shows_the_secret_once_and_stores_only_its_digest(alice, client_for):
    client = client_for(alice)
    secret = _create(client)
    token = ApiToken.objects.get(user=alice)
    assert token.digest == ApiToken.digest_of(secret)
    assert secret not in str(ApiToken.objects.values().get())
    assert secret not in client.get("/account/tokens/").content.decode()
    assert AuditEvent.objects.filter(action="tokens.created", actor_id=alice.pk).exists()


def test_a_token_acts_as_its_owner_with_the_same_checks(
    workspace, alice, client_for, client, member_factory
):
    viewer = member_factory(workspace, "viewer")
    viewer_secret = _create(client_for(viewer), "viewer-token")
    client.logout()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {viewer_secret}"}
    assert client.get(f"/api/v1/workspaces/{workspace.slug}/rules", **auth).status_code == 200
    refused = client.put(
        f"/api/v1/workspaces/{workspace.slug}/rules",
        {"tier": "light", "gated_axes": []},
        content_type="application/json",
        **auth,
    )
    assert refused.status_code == 403
    assert AuditEvent.objects.filter(action="permission.denied", actor_id=viewer.pk).exists()


@pytest.mark.parametrize(
    "header", ["Bearer qrm_not-a-real-token", "Bearer nonsense", "Basic abc", ""]
)
def test_it_answers_a_bad_token_with_a_clear_401(workspace, client, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get(f"/api/v1/workspaces/{workspace.slug}/rules", **extra)
    assert response.status_code == 401
    assert "personal API token" in response.json()["detail"]


def test_a_revoked_token_stops_working(workspace, alice, client_for, client):
    browser = client_for(alice)
    secret = _create(browser)
    token = ApiToken.objects.get(user=alice)
    browser.post("/account/tokens/", {"action": "revoke", "token_id": token.pk, "confirm": "yes"})
    browser.logout()
    response = client.get(
        f"/api/v1/workspaces/{workspace.slug}/rules", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )
    assert response.status_code == 401


def test_a_session_api_write_needs_the_csrf_token(workspace, alice):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.put(
        f"/api/v1/workspaces/{workspace.slug}/rules",
        {"tier": "light", "gated_axes": []},
        content_type="application/json",
    )
    assert response.status_code in (401, 403)
    workspace.refresh_from_db()
    assert workspace.tier == "balanced"


def test_the_openapi_document_is_served(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert "/api/v1/workspaces/{slug}/rules" in response.json()["paths"]
    assert client.get("/api/v1/docs").status_code == 200
