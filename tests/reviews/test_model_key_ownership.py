"""Model keys belong to whoever configured them: a workspace admin cannot send the server's own
model key to an endpoint they choose, whether through the key-variable setting (refused by name
at save, refused again before the call) or through an allow-listed variable that happens to hold
the same key (refused by value at call time). A reviewer's own key is entered sealed, never
shown again, audited when set or rotated, and is the key its endpoint receives.

The attacker's endpoint is a second fake model server (real HTTP) that records every request."""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from reviews.pipeline.runner import run_inline
from reviews.services.requests import review_request
from reviews.sources.sample_repo import create_sample_repository
from tests.fakes.model_server import FakeModelServer
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository, ReviewerConfig

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_KEY = "sk-the-servers-own-key-0123456789"


@pytest.fixture
def server_model(settings, fake_model, monkeypatch):
    """The server's model: the fake, with the server's key in settings and the environment
    (where a key variable would read it)."""
    fake_model.api_key = SERVER_KEY
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model)
    monkeypatch.setenv("QUORUM_LLM_API_KEY", SERVER_KEY)
    settings.QUORUM_MODEL_KEY_VARIABLES = []
    return fake_model


@pytest.fixture
def attacker():
    fake = FakeModelServer(api_key="sk-attacker-accepts-anything").start()
    scenario.install(fake)
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def review(settings, tmp_path, workspace, alice, server_model):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    path = tmp_path / "shop"
    create_sample_repository(path)
    repo = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(path.resolve())
    )

    def run():
        review_round = review_request(
            repository=repo,
            actor=alice,
            base="main",
            head="feature/search",
            tier="light",
            original_request="",
            queue=False,
        )
        done = run_inline(review_round.pk)
        assert done.state == "finished", done.error
        return done

    return run


def _saw(fake: FakeModelServer, secret: str) -> bool:
    return any(secret in r.body + str(r.headers) for r in fake.recorded())


def _patch(client, workspace, **data):
    return client.patch(
        f"/api/v1/workspaces/{workspace.slug}/reviewers/implementation",
        data,
        content_type="application/json",
    )


@pytest.mark.parametrize("variable", ["QUORUM_LLM_API_KEY", "OPENAI_API_KEY", "SECRET_KEY"])
def test_an_admin_cannot_name_the_servers_key_variable(
    workspace, alice, client_for, attacker, variable
):
    response = _patch(
        client_for(alice), workspace, api_key_env=variable, base_url=attacker.openai_base_url
    )
    assert response.status_code == 400
    assert variable in response.json()["detail"]
    assert ReviewerConfig.objects.get(workspace=workspace, key="implementation").base_url == ""


def test_the_servers_key_variable_is_refused_again_before_the_call(
    review, workspace, attacker, server_model
):
    # A row saved before the rule (or written around the service): the call-time check holds.
    ReviewerConfig.objects.filter(workspace=workspace, key="implementation").update(
        api_key_env="QUORUM_LLM_API_KEY", base_url=attacker.openai_base_url
    )
    stream = review().streams.get(name="implementation")
    assert not _saw(attacker, SERVER_KEY)
    assert not attacker.recorded()
    assert stream.state == "failed" and "server's own variables" in stream.error


def test_an_allow_listed_variable_holding_the_servers_key_is_not_sent_elsewhere(
    review, workspace, alice, client_for, attacker, settings, monkeypatch
):
    settings.QUORUM_MODEL_KEY_VARIABLES = ["OPENAI_API_KEY"]
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)  # the operator reused the server's key
    response = _patch(
        client_for(alice),
        workspace,
        api_key_env="OPENAI_API_KEY",
        base_url=attacker.openai_base_url,
    )
    assert response.status_code == 200, response.content
    stream = review().streams.get(name="implementation")
    assert not _saw(attacker, SERVER_KEY)
    assert stream.state == "failed" and "server's own key" in stream.error


def test_a_reviewer_without_a_key_of_its_own_gets_no_key_at_another_provider(
    review, workspace, attacker
):
    # Same (default) base URL, other provider: not the server's endpoint.
    ReviewerConfig.objects.filter(workspace=workspace, key="implementation").update(
        model_provider="anthropic", model_name="claude-x"
    )
    stream = review().streams.get(name="implementation")
    assert stream.state == "failed" and "no key of its own" in stream.error


def test_a_reviewers_own_key_is_sealed_audited_never_shown_and_sent_to_its_endpoint(
    review, workspace, alice, client_for, attacker, server_model
):
    own = "sk-reviewers-own-key-abcdef0123456789"
    attacker.api_key = own  # here the reviewer's own endpoint, which accepts its own key
    client = client_for(alice)
    response = _patch(client, workspace, api_key=own, base_url=attacker.openai_base_url)
    assert response.status_code == 200, response.content
    assert response.json()["api_key_set"] is True
    assert own not in response.content.decode()
    config = ReviewerConfig.objects.get(workspace=workspace, key="implementation")
    assert config.api_key_sealed and own not in config.api_key_sealed
    page = client.get(f"/w/{workspace.slug}/settings/reviewers/implementation/")
    assert own not in page.content.decode()
    assert own not in _patch(client, workspace).content.decode()
    event = AuditEvent.objects.get(workspace=workspace, action="reviewers.key_set")
    assert own not in str(event.payload) and config.api_key_sealed not in str(event.payload)

    stream = review().streams.get(name="implementation")
    assert stream.state == "done", stream.error
    calls = [r for r in attacker.recorded() if r.path.endswith("/chat/completions")]
    assert calls and {r.headers["authorization"] for r in calls} == {f"Bearer {own}"}
    assert not _saw(attacker, SERVER_KEY)
    assert not _saw(server_model, own)

    rotated = "sk-reviewers-rotated-key-9876543210"
    assert _patch(client, workspace, api_key=rotated).status_code == 200
    assert AuditEvent.objects.filter(action="reviewers.key_rotated").count() == 1
    assert _patch(client, workspace, api_key="").json()["api_key_set"] is False
    assert AuditEvent.objects.filter(action="reviewers.key_cleared").count() == 1


def test_the_page_takes_a_key_write_only(workspace, alice, client_for):
    own = "sk-entered-on-the-page-0123456789"
    client = client_for(alice)
    url = f"/w/{workspace.slug}/settings/reviewers/quality/"
    form = {
        "name": "Quality",
        "base_agent": "quality",
        "enabled": "on",
        "api_key": own,
        "shots-TOTAL_FORMS": "0",
        "shots-INITIAL_FORMS": "0",
    }
    assert client.post(url, form).status_code == 302
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert config.api_key_sealed
    assert own not in client.get(url).content.decode()
    # Saving again without a key keeps it; the clear box removes it.
    assert client.post(url, {**form, "api_key": ""}).status_code == 302
    assert ReviewerConfig.objects.get(pk=config.pk).api_key_sealed == config.api_key_sealed
    assert client.post(url, {**form, "api_key": "", "clear_api_key": "on"}).status_code == 302
    assert ReviewerConfig.objects.get(pk=config.pk).api_key_sealed == ""
