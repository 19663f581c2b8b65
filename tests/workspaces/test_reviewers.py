"""Settings → Reviewers: seeded defaults, edits with few-shots, stale calibration."""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from workspaces.models import ReviewerConfig


def test_it_seeds_every_builtin_reviewer(workspace):
    configs = {c.key: c for c in workspace.reviewers.all()}
    assert set(configs) == {
        "implementation",
        "quality",
        "architecture",
        "security",
        "performance",
        "requirements",
    }
    # Security and performance are existing agents with a brief.
    assert configs["security"].base_agent == "architecture" and configs["security"].brief
    assert configs["performance"].base_agent == "implementation" and configs["performance"].brief


def _form(**overrides):
    data = {
        "name": "Quality",
        "base_agent": "quality",
        "enabled": "on",
        "instructions": "Look for duplicated logic.",
        "anti_patterns": "god object\nmagic numbers\n",
        "criteria": "maintainability = 4\ntesting = 2.5",
        "model_provider": "openai",
        "model_name": "gpt-x",
        "calibrated_model": "openai:gpt-x",
        "shots-TOTAL_FORMS": "2",
        "shots-INITIAL_FORMS": "0",
        "shots-0-excerpt": "def f(x=[]): ...",
        "shots-0-good": "P2 bug: mutable default argument shared between calls",
        "shots-0-bad": "Looks fine",
        "shots-1-excerpt": "",
        "shots-1-good": "",
    }
    data.update(overrides)
    return data


def test_it_saves_a_reviewer_with_few_shots_and_audits_it(workspace, alice, client_for):
    url = f"/w/{workspace.slug}/settings/reviewers/quality/"
    response = client_for(alice).post(url, _form())
    assert response.status_code == 302
    cfg = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert cfg.anti_patterns == ["god object", "magic numbers"]
    assert cfg.criteria == [
        {"name": "maintainability", "weight": 4},
        {"name": "testing", "weight": 2.5},
    ]
    assert cfg.few_shots == [
        {
            "excerpt": "def f(x=[]): ...",
            "good": "P2 bug: mutable default argument shared between calls",
            "bad": "Looks fine",
        }
    ]
    event = AuditEvent.objects.get(workspace=workspace, action="reviewers.updated")
    assert event.payload["after"]["model_name"] == "gpt-x"
    assert event.payload["before"]["model_name"] == ""


def test_it_rejects_a_malformed_few_shot_and_changes_nothing(workspace, alice, client_for):
    before = ReviewerConfig.objects.get(workspace=workspace, key="quality").few_shots
    url = f"/w/{workspace.slug}/settings/reviewers/quality/"
    response = client_for(alice).post(url, _form(**{"shots-0-good": ""}))
    assert response.status_code == 400
    assert "A few-shot needs both a code excerpt and a good verdict." in response.content.decode()
    assert ReviewerConfig.objects.get(workspace=workspace, key="quality").few_shots == before
    assert not AuditEvent.objects.filter(action="reviewers.updated").exists()


@pytest.mark.parametrize(
    ("few_shots", "message"),
    [
        ([{"excerpt": "x"}], "good"),
        ([{"excerpt": "", "good": "fine"}], "excerpt"),
        ([{"excerpt": "x", "good": "y", "verdict": "z"}], "verdict"),
        ("not a list", "list"),
    ],
)
def test_the_api_rejects_malformed_few_shots(workspace, alice, client_for, few_shots, message):
    response = client_for(alice).patch(
        f"/api/v1/workspaces/{workspace.slug}/reviewers/quality",
        {"few_shots": few_shots},
        content_type="application/json",
    )
    assert response.status_code == 422
    assert message in str(response.json()["detail"])
    assert ReviewerConfig.objects.get(workspace=workspace, key="quality").few_shots == []


def test_it_rejects_bad_criteria_lines(workspace, alice, client_for):
    url = f"/w/{workspace.slug}/settings/reviewers/quality/"
    response = client_for(alice).post(url, _form(criteria="security = lots"))
    assert response.status_code == 400
    assert "Line 1: write" in response.content.decode()


def test_it_shows_a_stale_calibration(workspace, alice, client_for):
    ReviewerConfig.objects.filter(workspace=workspace, key="security").update(
        model_provider="anthropic", model_name="claude-new", calibrated_model="anthropic:claude-old"
    )
    client = client_for(alice)
    listing = client.get(f"/w/{workspace.slug}/settings/reviewers/").content.decode()
    assert listing.count("calibration stale") == 1
    detail = client.get(f"/w/{workspace.slug}/settings/reviewers/security/").content.decode()
    assert "Calibration stale" in detail and "anthropic:claude-old" in detail
    api = client.get(f"/api/v1/workspaces/{workspace.slug}/reviewers/security").json()
    assert api["calibration_stale"] is True


def test_it_creates_and_deletes_a_custom_reviewer_but_never_a_builtin(workspace, alice, client_for):
    client = client_for(alice)
    base = f"/api/v1/workspaces/{workspace.slug}/reviewers"
    created = client.post(
        base,
        {
            "key": "a11y",
            "name": "Accessibility",
            "base_agent": "quality",
            "criteria": [{"name": "wcag", "weight": 5}],
        },
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    assert client.delete(f"{base}/a11y").status_code == 204
    refused = client.delete(f"{base}/security")
    assert refused.status_code == 400
    assert "cannot be deleted" in refused.json()["detail"]
    actions = list(
        AuditEvent.objects.filter(action__startswith="reviewers.").values_list("action", flat=True)
    )
    assert actions == ["reviewers.created", "reviewers.deleted"]


def test_the_model_a_reviewer_runs_on_is_decided_in_one_place(workspace, settings):
    """Its own settings over the server's, field by field; what the settings page calls its
    model is what the pipeline runs (workspaces/models.py `reviewer_model`)."""
    from workspaces.model_choice import ModelChoice
    from workspaces.models import reviewer_model, workspace_model_configured

    settings.QUORUM_LLM_PROVIDER, settings.QUORUM_LLM_MODEL = "openai", "server-model"
    settings.QUORUM_LLM_BASE_URL = "https://llm.example/v1"
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert reviewer_model(None) == ModelChoice("openai", "server-model", "https://llm.example/v1")
    assert config.effective_model() == "openai:server-model"
    config.model_provider, config.model_name = "anthropic", "claude-x"
    config.api_key_env = "QUALITY_KEY"
    assert reviewer_model(config) == ModelChoice(
        "anthropic", "claude-x", "https://llm.example/v1", "QUALITY_KEY"
    )
    assert config.effective_model() == "anthropic:claude-x"
    # A reviewer naming only a model keeps the server's provider, and runs on that pair.
    config.model_provider = ""
    assert config.effective_model() == "openai:claude-x"
    assert workspace_model_configured(workspace)

    settings.QUORUM_LLM_PROVIDER = settings.QUORUM_LLM_MODEL = ""
    assert reviewer_model(None) is None and config.effective_model() == ""
    assert not workspace_model_configured(workspace)
    ReviewerConfig.objects.filter(pk=config.pk).update(model_provider="openai", model_name="m")
    assert workspace_model_configured(workspace)
