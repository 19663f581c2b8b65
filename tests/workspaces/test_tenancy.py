"""The tenant boundary: a workspace connects only what it can prove access to, and only the
workspace bound to a repository receives its webhooks."""

from __future__ import annotations

import json
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.management import call_command

from reviews.models import ReviewRound
from tests.fakes.github_server import FakeGitHub, pull_request_payload, sign
from workspaces import services
from workspaces.models import GitHubInstallation, Repository
from workspaces.rules import RuleError

SECRET = "webhook-secret"


@pytest.fixture
def two_tenants(workspace_factory, user_factory):
    return workspace_factory("Tenant A"), workspace_factory("Tenant B")


@pytest.fixture
def real_time_github():
    """The fake GitHub on the wall clock: app JWTs are signed with the real time here."""
    fake = FakeGitHub(clock=time.time).start()
    yield fake
    fake.stop()


@pytest.fixture
def github(real_time_github, git_repo_factory, settings):
    """acme/app (installation 1) and other/tool (installation 2) on the fake GitHub."""
    fake_github = real_time_github
    for owner, name, installation in (("acme", "app", 1), ("other", "tool", 2)):
        repo = git_repo_factory(name)
        repo.commit("base", {"a.py": "x = 1\n"}, branch="main")
        repo.commit("change", {"a.py": "x = 2\n"}, branch="feature")
        fake_github.add_repo(owner, name, repo.path, installation_id=installation)
        fake_github.add_pull(owner, name, 3, base="main", head="feature", author="dev")
    settings.GITHUB_API_URL = fake_github.base_url
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    return fake_github


@pytest.fixture
def app_mode(github, settings, tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    github.configure_app(77, public, slug="quorum")
    (tmp_path / "app.pem").write_bytes(pem)
    settings.GITHUB_APP_ID, settings.GITHUB_APP_PRIVATE_KEY_PATH = "77", str(tmp_path / "app.pem")
    settings.GITHUB_TOKEN = ""
    return github


@pytest.fixture
def token_mode(github, settings):
    github.add_token("ghp_server", login="quorum-bot")
    settings.GITHUB_TOKEN, settings.GITHUB_APP_ID = "ghp_server", ""
    return github


def _connect(workspace, name):
    owner = workspace.memberships.get(role="owner").user
    return services.repository_connect(workspace=workspace, actor=owner, kind="github", name=name)


def _deliver(client, fake, owner, name, *, installation, delivery):
    payload = pull_request_payload(fake, owner, name, 3, action="opened")
    payload["installation"] = {"id": installation}
    body = json.dumps(payload).encode()
    return client.post(
        "/webhooks/github/",
        body,
        content_type="application/json",
        HTTP_X_GITHUB_EVENT="pull_request",
        HTTP_X_GITHUB_DELIVERY=delivery,
        HTTP_X_HUB_SIGNATURE_256=sign(SECRET.encode(), body),
    )


def test_app_mode_connects_only_repositories_of_the_bound_installation(app_mode, two_tenants):
    a, b = two_tenants
    call_command("tenancy", "bind-installation", a.slug, "1")
    assert GitHubInstallation.objects.get(installation_id=1).workspace == a
    assert _connect(a, "acme/app").full_name == "acme/app"
    with pytest.raises(RuleError, match="not bound to this workspace"):
        _connect(b, "acme/app")
    with pytest.raises(RuleError, match="not bound to this workspace"):
        _connect(a, "other/tool")  # installed, but on another account's installation
    with pytest.raises(RuleError, match="not installed"):
        _connect(a, "acme/missing")
    with pytest.raises(RuleError, match="bound to another workspace"):
        services.installation_bind(workspace=b, installation_id=1)


def test_app_mode_webhooks_reach_only_the_workspace_bound_to_the_installation(
    app_mode, two_tenants, client
):
    a, b = two_tenants
    services.installation_bind(workspace=a, installation_id=1)
    Repository.objects.create(workspace=a, kind="github", full_name="acme/app", auto_review=True)
    # B holds a row for the same name (e.g. created before the boundary existed): it must not
    # hear about A's pull requests.
    Repository.objects.create(workspace=b, kind="github", full_name="acme/app", auto_review=True)
    response = _deliver(client, app_mode, "acme", "app", installation=1, delivery="d1")
    assert response.status_code == 202
    assert [r.space.workspace for r in ReviewRound.objects.all()] == [a]
    # A delivery naming an installation bound to nobody reaches nobody.
    response = _deliver(client, app_mode, "acme", "app", installation=2, delivery="d2")
    assert response.status_code == 200 and ReviewRound.objects.count() == 1


def test_token_mode_connects_only_granted_repositories(token_mode, two_tenants):
    a, b = two_tenants
    with pytest.raises(RuleError, match="not been granted"):
        _connect(a, "acme/app")
    call_command("tenancy", "grant-repository", a.slug, "acme/app")
    assert _connect(a, "acme/app").full_name == "acme/app"
    with pytest.raises(RuleError, match="not been granted"):
        _connect(b, "acme/app")


def test_token_mode_webhooks_reach_only_granted_workspaces(token_mode, two_tenants, client):
    a, b = two_tenants
    services.repository_grant(workspace=a, full_name="acme/app")
    for ws in (a, b):
        Repository.objects.create(
            workspace=ws, kind="github", full_name="acme/app", auto_review=True
        )
    response = _deliver(client, token_mode, "acme", "app", installation=1, delivery="t1")
    assert response.status_code == 202
    assert [r.space.workspace for r in ReviewRound.objects.all()] == [a]


def test_nothing_connects_when_github_is_not_configured(two_tenants, settings):
    settings.GITHUB_TOKEN, settings.GITHUB_APP_ID = "", ""
    with pytest.raises(RuleError, match="not configured"):
        _connect(two_tenants[0], "acme/app")


def test_local_roots_are_granted_per_workspace(two_tenants, settings, tmp_path, git_repo_factory):
    a, b = two_tenants
    settings.QUORUM_SHARED_LOCAL_ROOTS = False
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    (tmp_path / "a").mkdir()
    from tests.fakes.gitrepo import GitRepo

    repo = GitRepo.init(tmp_path / "a" / "project")
    repo.commit("base", {"x.py": "x = 1\n"}, branch="main")
    owner_b = b.memberships.get(role="owner").user
    with pytest.raises(RuleError, match="none granted"):
        services.repository_connect(workspace=b, actor=owner_b, kind="local", name=str(repo.path))
    call_command("tenancy", "grant-local-root", a.slug, str(tmp_path / "a"))
    owner_a = a.memberships.get(role="owner").user
    connected = services.repository_connect(
        workspace=a, actor=owner_a, kind="local", name=str(repo.path)
    )
    assert connected.local_path == str(repo.path.resolve())
    with pytest.raises(RuleError, match="outside the directories"):
        services.repository_connect(workspace=b, actor=owner_b, kind="local", name=str(repo.path))
    # A grant outside the server-wide fence is refused.
    with pytest.raises(RuleError, match="QUORUM_LOCAL_REPO_ROOTS"):
        services.local_root_grant(workspace=b, path="/etc")


def test_signing_up_and_creating_workspaces_are_closed_unless_opened(
    settings, client, user_factory
):
    settings.QUORUM_OPEN_SIGNUP = False
    settings.QUORUM_OPEN_WORKSPACES = False
    client.post(
        "/accounts/signup/",
        {
            "email": "new@example.com",
            "password1": "pw-Long-enough-1",
            "password2": "pw-Long-enough-1",
        },
    )
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(email="new@example.com").exists()
    user = user_factory()
    client.force_login(user)
    assert client.get("/new/").status_code == 403
    assert client.post("/new/", {"name": "Mine"}).status_code == 403
    settings.QUORUM_OPEN_WORKSPACES = True
    assert client.post("/new/", {"name": "Mine"}).status_code == 302
