"""Settings → Repositories: GitHub names and local paths confined to the allowed roots."""

from __future__ import annotations

import subprocess

import pytest

from guardrails.models import AuditEvent
from workspaces.models import Repository
from workspaces.services import local_root_grant, repository_grant


@pytest.fixture
def repo_roots(tmp_path, settings, workspace):
    """A server fence with one directory granted to the workspace by an operator."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_SHARED_LOCAL_ROOTS = False
    local_root_grant(workspace=workspace, path=str(allowed))
    return allowed


@pytest.fixture(autouse=True)
def github_token(settings, workspace):
    """A server-wide token setup in which the operator granted acme/web to the workspace."""
    settings.GITHUB_TOKEN, settings.GITHUB_APP_ID = "ghp_server", ""
    repository_grant(workspace=workspace, full_name="acme/web")


def _git_init(path):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def _connect(client, workspace, **body):
    return client.post(
        f"/api/v1/workspaces/{workspace.slug}/repositories", body, content_type="application/json"
    )


def test_it_connects_a_github_repository_and_audits_it(workspace, alice, client_for):
    response = _connect(
        client_for(alice), workspace, kind="github", name="acme/web", auto_review=True
    )
    assert response.status_code == 201
    assert response.json()["name"] == "acme/web"
    event = AuditEvent.objects.get(workspace=workspace, action="repositories.connected")
    assert event.payload["after"] == {
        "kind": "github",
        "name": "acme/web",
        "base_branch": "main",
        "auto_review": True,
        "review_drafts": False,
        "hold_fails_check": False,
    }


def test_only_an_admin_makes_hold_fail_the_github_check(
    workspace, alice, client_for, member_factory
):
    """Whether a Hold blocks a merge that requires the Quorum check is a repository setting an
    admin changes (the page's form and the API); a reviewer is refused."""
    _connect(client_for(alice), workspace, kind="github", name="acme/web")
    repo = Repository.objects.get(full_name="acme/web")
    url = f"/api/v1/workspaces/{workspace.slug}/repositories/{repo.pk}"
    ruth = member_factory(workspace, "reviewer", "ruth@example.com")
    refused = client_for(ruth).patch(url, {"hold_fails_check": True}, "application/json")
    assert refused.status_code == 403
    repo.refresh_from_db()
    assert repo.hold_fails_check is False
    page = client_for(alice).post(
        f"/w/{workspace.slug}/settings/repositories/{repo.pk}/",
        {"action": "update", "base_branch": "main", "hold_fails_check": "on"},
    )
    assert page.status_code == 302
    repo.refresh_from_db()
    assert repo.hold_fails_check is True
    listed = client_for(alice).get(f"/w/{workspace.slug}/settings/repositories/")
    assert 'name="hold_fails_check" checked' in listed.content.decode()
    changed = client_for(alice).patch(url, {"hold_fails_check": False}, "application/json")
    assert changed.status_code == 200 and changed.json()["hold_fails_check"] is False
    event = AuditEvent.objects.filter(action="repositories.updated").latest("seq")
    assert (
        event.payload["before"]["hold_fails_check"],
        event.payload["after"]["hold_fails_check"],
    ) == (True, False)


@pytest.mark.parametrize(
    "name", ["acme", "acme/web/extra", "-acme/web", "acme/..", "ac me/web", ""]
)
def test_it_rejects_a_bad_github_name(workspace, alice, client_for, name):
    response = _connect(client_for(alice), workspace, kind="github", name=name)
    assert response.status_code in (400, 422)
    assert not Repository.objects.exists()


def test_it_connects_a_local_repository_under_an_allowed_root(
    workspace, alice, client_for, repo_roots
):
    repo = _git_init(repo_roots / "shop")
    response = _connect(client_for(alice), workspace, kind="local", name=str(repo))
    assert response.status_code == 201, response.content
    assert Repository.objects.get().local_path == str(repo.resolve())


def test_it_refuses_paths_outside_the_allowed_roots(
    workspace, alice, client_for, repo_roots, tmp_path
):
    outside = _git_init(tmp_path / "outside")
    escape = repo_roots / "link"
    escape.symlink_to(outside)
    client = client_for(alice)
    for name in (
        str(outside),
        str(repo_roots / ".." / "outside"),
        str(escape),
        "/etc",
        "relative/path",
    ):
        response = _connect(client, workspace, kind="local", name=name)
        assert response.status_code == 400, name
        assert response.json()["detail"]
    assert not Repository.objects.exists()


def test_it_refuses_a_directory_that_is_not_a_repository(workspace, alice, client_for, repo_roots):
    (repo_roots / "plain").mkdir()
    response = _connect(client_for(alice), workspace, kind="local", name=str(repo_roots / "plain"))
    assert response.status_code == 400
    assert "not a git repository" in response.json()["detail"]


def test_the_page_updates_and_disconnects(workspace, alice, client_for):
    client = client_for(alice)
    _connect(client, workspace, kind="github", name="acme/web")
    repo = Repository.objects.get()
    url = f"/w/{workspace.slug}/settings/repositories/{repo.pk}/"
    client.post(url, {"action": "update", "base_branch": "develop", "auto_review": "on"})
    repo.refresh_from_db()
    assert (repo.base_branch, repo.auto_review) == ("develop", True)
    response = client.post(url, {"action": "update", "base_branch": "bad..branch"}, follow=True)
    assert "not a valid branch name" in response.content.decode()
    client.post(url, {"action": "remove", "confirm": "yes"})
    repo.refresh_from_db()
    assert repo.archived_at is not None  # disconnecting archives, never deletes
    actions = list(
        AuditEvent.objects.filter(action__startswith="repositories.").values_list(
            "action", flat=True
        )
    )
    assert actions == ["repositories.connected", "repositories.updated", "repositories.archived"]


def test_drafts_are_reviewed_automatically_only_when_turned_on(workspace, alice, client_for):
    """The repository setting next to auto-review, on the page and in the API, audited."""
    client = client_for(alice)
    _connect(client, workspace, kind="github", name="acme/web", auto_review=True)
    repo = Repository.objects.get()
    assert repo.review_drafts is False
    page = client.get(f"/w/{workspace.slug}/settings/repositories/").content.decode()
    assert 'name="review_drafts"' in page and "drafts too" in page
    url = f"/w/{workspace.slug}/settings/repositories/{repo.pk}/"
    client.post(
        url, {"action": "update", "base_branch": "main", "auto_review": "on", "review_drafts": "on"}
    )
    repo.refresh_from_db()
    assert (repo.auto_review, repo.review_drafts) == (True, True)
    event = AuditEvent.objects.get(action="repositories.updated")
    assert (event.payload["before"]["review_drafts"], event.payload["after"]["review_drafts"]) == (
        False,
        True,
    )
    api = f"/api/v1/workspaces/{workspace.slug}/repositories/{repo.pk}"
    response = client.patch(api, {"review_drafts": False}, content_type="application/json")
    assert response.status_code == 200 and response.json()["review_drafts"] is False
    listed = client.get(f"/api/v1/workspaces/{workspace.slug}/repositories").json()
    assert listed[0]["review_drafts"] is False and listed[0]["auto_review"] is True
