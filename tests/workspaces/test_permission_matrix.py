"""Which role may open and change which settings page and API route."""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from workspaces.services import repository_grant

ROLES = ["owner", "admin", "approver", "reviewer", "viewer"]
MANAGERS = {"owner", "admin"}

PAGES = ["general", "members", "reviewers", "repositories"]


@pytest.fixture
def as_role(workspace, member_factory, client_for, alice):
    def login(role: str):
        user = alice if role == "owner" else member_factory(workspace, role)
        return client_for(user)

    return login


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("page", PAGES)
def test_it_lets_every_member_read_settings_pages(as_role, workspace, role, page):
    """Settings are readable by all members; editing controls appear only for managers."""
    client = as_role(role)
    response = client.get(f"/w/{workspace.slug}/settings/{'' if page == 'general' else page + '/'}")
    assert response.status_code == 200
    editable = (
        b"<fieldset >" in response.content
        or b"Connect</button>" in response.content
        or (b"Invite</button>" in response.content)
        or b"Add a custom reviewer" in response.content
    )
    assert editable == (role in MANAGERS)


@pytest.mark.parametrize("role", ROLES)
def test_it_allows_rule_changes_only_to_owners_and_admins(as_role, workspace, role):
    client = as_role(role)
    response = client.post(
        f"/w/{workspace.slug}/settings/", {"tier": "thorough", "gated_axes": ["apiContract"]}
    )
    workspace.refresh_from_db()
    if role in MANAGERS:
        assert response.status_code == 302
        assert workspace.tier == "thorough"
    else:
        assert response.status_code == 403
        assert workspace.tier == "balanced"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("put", "rules", {"tier": "light", "gated_axes": []}),
        ("patch", "reviewers/quality", {"instructions": "be brief"}),
        ("post", "members", {"email": "new@example.com", "role": "viewer"}),
        ("post", "repositories", {"kind": "github", "name": "acme/web"}),
    ],
)
def test_it_applies_the_same_rules_to_the_api(
    as_role, workspace, role, method, path, body, settings
):
    settings.GITHUB_TOKEN, settings.GITHUB_APP_ID = "ghp_server", ""
    repository_grant(workspace=workspace, full_name="acme/web")  # an operator's grant
    client = as_role(role)
    url = f"/api/v1/workspaces/{workspace.slug}/{path}"
    response = getattr(client, method)(url, body, content_type="application/json")
    expected = {"put": 200, "patch": 200, "post": 201}[method] if role in MANAGERS else 403
    assert response.status_code == expected, response.content
    if expected == 403:
        assert "needs admin" in response.json()["detail"]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    "path", ["rules", "reviewers", "reviewer-precision", "members", "repositories"]
)
def test_it_lets_every_member_read_through_the_api(as_role, workspace, role, path):
    response = as_role(role).get(f"/api/v1/workspaces/{workspace.slug}/{path}")
    assert response.status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/w/{slug}/settings/",
        "/w/{slug}/settings/members/",
        "/w/{slug}/settings/reviewers/",
        "/w/{slug}/settings/reviewers/quality/",
        "/w/{slug}/settings/repositories/",
        "/w/{slug}/reviews/",
        "/w/{slug}/approvals/",
        "/w/{slug}/audit/",
        "/api/v1/workspaces/{slug}/rules",
        "/api/v1/workspaces/{slug}/reviewers",
        "/api/v1/workspaces/{slug}/reviewers/quality",
        "/api/v1/workspaces/{slug}/reviewer-precision",
        "/api/v1/workspaces/{slug}/members",
        "/api/v1/workspaces/{slug}/repositories",
    ],
)
def test_it_hides_another_workspace_from_an_outsider(workspace, charlie, client_for, url):
    """charlie belongs to no workspace: every page and API object of Acme is a 404."""
    response = client_for(charlie).get(url.format(slug=workspace.slug))
    assert response.status_code == 404


def test_it_gives_an_outsider_404_on_writes_and_audits_nothing(workspace, charlie, client_for):
    client = client_for(charlie)
    before = AuditEvent.objects.count()
    assert client.post(f"/w/{workspace.slug}/settings/", {"tier": "light"}).status_code == 404
    response = client.put(
        f"/api/v1/workspaces/{workspace.slug}/rules",
        {"tier": "light", "gated_axes": []},
        content_type="application/json",
    )
    assert response.status_code == 404
    workspace.refresh_from_db()
    assert workspace.tier == "balanced"
    assert AuditEvent.objects.count() == before


def test_it_sends_anonymous_visitors_to_the_login_page(workspace, client):
    response = client.get(f"/w/{workspace.slug}/settings/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
