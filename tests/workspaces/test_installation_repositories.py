"""A GitHub App's repositories stay in step with its installation (issue 12): the connect form
offers what the installation bound to the workspace reaches now, as GitHub says, and the
`installation_repositories` webhook archives what it no longer reaches."""

from __future__ import annotations

import json
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.github_server import FakeGitHub, sign
from workspaces import services
from workspaces.models import Repository

SECRET = "webhook-secret"


@pytest.fixture
def app_github(settings, tmp_path, git_repo_factory, workspace):
    """The fake GitHub (wall clock: app JWTs carry the real time) with the App installed on
    acme/app and acme/api (installation 1, bound to the workspace) and on other/tool
    (installation 2, not bound)."""
    fake = FakeGitHub(clock=time.time).start()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    fake.configure_app(77, public, slug="quorum")
    (tmp_path / "app.pem").write_bytes(pem)
    settings.GITHUB_APP_ID, settings.GITHUB_APP_PRIVATE_KEY_PATH = "77", str(tmp_path / "app.pem")
    settings.GITHUB_TOKEN, settings.GITHUB_API_URL = "", fake.base_url
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    for owner, name, installation in (("acme", "app", 1), ("acme", "api", 1), ("other", "tool", 2)):
        repo = git_repo_factory(name)
        repo.commit("base", {"a.py": "x = 1\n"}, branch="main")
        fake.add_repo(owner, name, repo.path, installation_id=installation)
    services.installation_bind(workspace=workspace, installation_id=1, account_login="acme")
    yield fake
    fake.stop()


def _offered(client, workspace) -> list[str]:
    page = client.get(f"/w/{workspace.slug}/settings/repositories/").content.decode()
    return [
        name
        for name in ("acme/app", "acme/api", "acme/new", "other/tool")
        if f'aria-label="Connect {name}"' in page
    ]


def _deliver(client, payload, delivery):
    body = json.dumps(payload).encode()
    return client.post(
        "/webhooks/github/",
        body,
        content_type="application/json",
        HTTP_X_GITHUB_EVENT="installation_repositories",
        HTTP_X_GITHUB_DELIVERY=delivery,
        HTTP_X_HUB_SIGNATURE_256=sign(SECRET.encode(), body),
    )


def _changed(action, names):
    key = "repositories_added" if action == "added" else "repositories_removed"
    return {
        "action": action,
        "installation": {"id": 1, "account": {"login": "acme"}},
        "repositories_added": [],
        "repositories_removed": [],
        key: [{"full_name": n} for n in names],
    }


def test_the_connect_form_follows_the_installation(app_github, workspace, alice, client_for):
    client = client_for(alice)
    # What installation 1 reaches, never another installation's repositories.
    assert _offered(client, workspace) == ["acme/app", "acme/api"]
    connected = client.post(
        f"/w/{workspace.slug}/settings/repositories/",
        {"kind": "github", "name": "acme/app", "base_branch": "main"},
    )
    assert connected.status_code == 302
    assert _offered(client, workspace) == ["acme/api"]

    # GitHub adds a repository to the installation, then removes the connected one.
    git_repo = app_github.repos[("acme", "api")].path
    app_github.add_repo("acme", "new", git_repo, installation_id=1)
    assert _deliver(client, _changed("added", ["acme/new"]), "i-add").status_code == 200
    assert not Repository.objects.filter(full_name="acme/new").exists()  # not auto-connected
    assert _offered(client, workspace) == ["acme/api", "acme/new"]

    app_github.set_installation("acme", "app", None)
    removed = _deliver(client, _changed("removed", ["acme/app"]), "i-remove")
    assert removed.status_code == 200 and "archived acme/app" in removed.json()["detail"]
    repo = Repository.objects.get(full_name="acme/app")
    assert repo.archived_at is not None  # its reviews kept, read-only
    assert _offered(client, workspace) == ["acme/api", "acme/new"]
    page = client.get(f"/w/{workspace.slug}/settings/repositories/").content.decode()
    assert "Disconnected repositories" in page


def test_viewers_are_not_offered_anything(app_github, workspace, member_factory, client_for):
    client = client_for(member_factory(workspace, "viewer"))
    assert _offered(client, workspace) == []
    assert not app_github.requests_to("GET", "/installation/repositories")


def test_the_list_follows_githubs_pages(app_github, tmp_path):
    from reviews.services.github import installation_repositories

    for n in range(105):
        app_github.add_repo("acme", f"r{n:03}", tmp_path, installation_id=1)
    names = installation_repositories(1)
    assert len(names) == 107 and len(set(names)) == 107 and "other/tool" not in names
    assert len(app_github.requests_to("GET", "/installation/repositories")) == 2
