"""Settings → Reviewers: an admin sets a reviewer's model endpoint (base URL and the NAME of the
variable holding its key, never the key), its tiers, and sees where it runs; checks run on the
server, for the page and the API alike."""

from __future__ import annotations

import pytest
from django.test import Client

from guardrails.models import AuditEvent
from workspaces import rules
from workspaces.models import ReviewerConfig

KEYS = [
    "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    "sk-ant-api03-abcdefghijklmnop",
    "ghp_0123456789abcdefABCDEF0123456789abcd",
    "AKIAIOSFODNN7EXAMPLE",
    "Bearer abc.def",
    "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4f9a8b7c",
]


def _form(**overrides):
    data = {
        "name": "Quality",
        "base_agent": "quality",
        "enabled": "on",
        "shots-TOTAL_FORMS": "0",
        "shots-INITIAL_FORMS": "0",
    }
    data.update(overrides)
    return data


@pytest.fixture(autouse=True)
def allow_listed(settings):
    """The operator allows these server variables as reviewers' keys."""
    settings.QUORUM_MODEL_KEY_VARIABLES = ["QUALITY_API_KEY", "PAYMENTS_API_KEY", "OPENAI_API_KEY"]


def test_an_admin_sets_a_reviewers_endpoint_on_the_page(workspace, alice, client_for):
    url = f"/w/{workspace.slug}/settings/reviewers/quality/"
    client = client_for(alice)
    response = client.post(
        url, _form(base_url="https://llm.internal/v1", api_key_env="QUALITY_API_KEY")
    )
    assert response.status_code == 302
    cfg = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert (cfg.base_url, cfg.api_key_env) == ("https://llm.internal/v1", "QUALITY_API_KEY")
    event = AuditEvent.objects.get(workspace=workspace, action="reviewers.updated")
    assert event.payload["after"]["api_key_env"] == "QUALITY_API_KEY"
    page = client.get(url).content.decode()
    assert 'value="https://llm.internal/v1"' in page and 'value="QUALITY_API_KEY"' in page


@pytest.mark.parametrize("key", KEYS)
def test_a_key_where_its_variables_name_belongs_is_refused(workspace, alice, client_for, key):
    client = client_for(alice)
    page = client.post(f"/w/{workspace.slug}/settings/reviewers/quality/", _form(api_key_env=key))
    assert page.status_code == 400
    assert "looks like an API key" in page.content.decode()
    assert key not in page.content.decode()  # nor shown again in the form
    api = client.patch(
        f"/api/v1/workspaces/{workspace.slug}/reviewers/quality",
        {"api_key_env": key},
        content_type="application/json",
    )
    assert api.status_code == 400
    assert "looks like an API key" in api.json()["detail"]
    assert key not in api.content.decode()  # the refusal does not echo the key back
    assert ReviewerConfig.objects.get(workspace=workspace, key="quality").api_key_env == ""
    assert not AuditEvent.objects.filter(action="reviewers.updated").exists()


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("openai_api_key", "not an environment variable name"),
        ("9_API_KEY", "not an environment variable name"),
        ("OPENAI-API-KEY", "not an environment variable name"),
        ("SECRET_KEY", "the server's own variables"),
        ("DATABASE_URL", "the server's own variables"),
        ("QUORUM_LLM_API_KEY", "the server's own variables"),
        ("QUORUM_AUDIT_KEY", "the server's own variables"),
        ("OPENAI_API_KEY_FILE", "the server's own variables"),
        ("ANTHROPIC_API_KEY", "not on the server's allow-list"),
    ],
)
def test_the_key_variable_must_be_an_allowed_model_keys_name(value, words):
    allowed = [value, "OPENAI_API_KEY"]  # even an operator's allow-list cannot free the server's
    if value == "ANTHROPIC_API_KEY":
        allowed = ["OPENAI_API_KEY"]
    with pytest.raises(rules.RuleError, match=words):
        rules.clean_api_key_env(value, allowed)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("ftp://llm.example/v1", "not an http"),
        ("llm.example/v1", "not an http"),
        ("https://user:sk-abc@llm.example/v1", "carries credentials"),
        ("https://llm.example/v1?api_key=abc", "carries credentials"),
    ],
)
def test_the_base_url_is_an_endpoint_without_credentials(value, words):
    with pytest.raises(rules.RuleError, match=words):
        rules.clean_base_url(value)


def test_valid_names_and_urls_pass():
    assert rules.clean_api_key_env(" OPENAI_API_KEY ", ["OPENAI_API_KEY"]) == "OPENAI_API_KEY"
    assert rules.clean_api_key_env("") == ""
    assert rules.clean_base_url("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434/v1"


@pytest.mark.parametrize("role", ["viewer", "reviewer", "approver"])
def test_only_admins_change_the_endpoint(workspace, member_factory, client_for, role):
    client = client_for(member_factory(workspace, role))
    page = client.post(
        f"/w/{workspace.slug}/settings/reviewers/quality/",
        _form(base_url="https://evil.example/v1", api_key_env="OPENAI_API_KEY"),
    )
    api = client.patch(
        f"/api/v1/workspaces/{workspace.slug}/reviewers/quality",
        {"base_url": "https://evil.example/v1"},
        content_type="application/json",
    )
    assert page.status_code == 403 and api.status_code == 403
    assert ReviewerConfig.objects.get(workspace=workspace, key="quality").base_url == ""


def test_the_page_refuses_a_post_without_its_csrf_token(workspace, alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(
        f"/w/{workspace.slug}/settings/reviewers/quality/",
        _form(base_url="https://llm.internal/v1"),
    )
    assert response.status_code == 403
    assert ReviewerConfig.objects.get(workspace=workspace, key="quality").base_url == ""


def test_the_api_sets_a_custom_reviewers_endpoint_and_tiers(workspace, alice, client_for):
    client = client_for(alice)
    created = client.post(
        f"/api/v1/workspaces/{workspace.slug}/reviewers",
        {
            "key": "payments",
            "name": "Payments",
            "base_agent": "implementation",
            "base_url": "https://llm.internal/v1",
            "api_key_env": "PAYMENTS_API_KEY",
            "tiers": ["thorough", "adaptive"],
        },
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["base_url"] == "https://llm.internal/v1"
    assert body["api_key_env"] == "PAYMENTS_API_KEY"
    assert body["tiers"] == ["thorough", "adaptive"]
    bad = client.patch(
        f"/api/v1/workspaces/{workspace.slug}/reviewers/payments",
        {"tiers": ["nightly"]},
        content_type="application/json",
    )
    assert bad.status_code == 422


def test_a_builtin_reviewers_tiers_are_the_templates(workspace, alice, client_for):
    response = client_for(alice).patch(
        f"/api/v1/workspaces/{workspace.slug}/reviewers/security",
        {"tiers": ["light"]},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "tiers the pipeline template gives it" in response.json()["detail"]


@pytest.mark.parametrize("key", ["ruff", "bandit", "followup-quality", "lens-severity"])
def test_a_custom_reviewer_cannot_take_a_pipeline_name(workspace, alice, client_for, key):
    response = client_for(alice).post(
        f"/api/v1/workspaces/{workspace.slug}/reviewers",
        {"key": key, "name": "X", "base_agent": "quality"},
        content_type="application/json",
    )
    assert response.status_code in (400, 422)


def test_the_settings_page_says_where_each_reviewer_runs(workspace, alice, client_for):
    client = client_for(alice)
    created = client.post(
        f"/w/{workspace.slug}/settings/reviewers/new/",
        _form(
            key="payments",
            name="Payments",
            base_agent="combined",
            tiers=["balanced", "adaptive"],
        ),
    )
    assert created.status_code == 302, created.content.decode()
    ReviewerConfig.objects.filter(workspace=workspace, key="performance").update(enabled=False)
    listing = client.get(f"/w/{workspace.slug}/settings/reviewers/").content.decode()
    assert (
        "Runs in the balanced tier and in adaptive rounds that select the quality reviewer."
        in listing
    )
    assert "Runs in the light, balanced, thorough tiers" in listing  # implementation
    assert "Disabled: runs nowhere" in listing
    detail = client.get(f"/w/{workspace.slug}/settings/reviewers/payments/").content.decode()
    assert "checks the change against the original request" in detail
    assert 'name="tiers"' in detail
    builtin = client.get(f"/w/{workspace.slug}/settings/reviewers/security/").content.decode()
    assert "Runs in the thorough tier and in adaptive rounds that select the security" in builtin
    assert 'name="tiers"' not in builtin
