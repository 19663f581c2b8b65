"""Reviewers that learn from people, end to end on the fake model: a round's findings are
dismissed and resolved with reasons, the security reviewer's settings page proposes few-shots
from them (the secret in the code redacted), the admin accepts one there, and the security
reviewer's request in the next round carries it; a non-admin is refused."""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from reviews.models import ReviewNode
from reviews.services.nodes import node_dismiss, node_resolve
from tests.fakes.model_server import FakeModelServer, sample_finding
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import FewShotProposal, ReviewerConfig

pytestmark = pytest.mark.django_db(transaction=True)

# The sample repository's shop/search.py commits this key on line 7.
KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
ROLE = "## Your role\n\n"


def secret_finding():
    return sample_finding(
        "shop/search.py",
        7,
        title="Hard-coded API key",
        body="Move the key to the environment and rotate it.",
        priority="P1",
        triage={"category": "security", "severity": "high", "effort": "small"},
    )


def _roles(fake: FakeModelServer, key: str, since: int = 0) -> list[str]:
    """The role part (the end of the user message) of each first request `key`'s reviewer
    sent, from the `since`-th request the fake model received."""
    found = []
    for request in fake.recorded("openai")[since:]:
        body = request.json if isinstance(request.json, dict) else {}
        for message in body.get("messages", []):
            content = message.get("content")
            if message.get("role") != "user" or content is None:
                continue
            text = (
                content
                if isinstance(content, str)
                else "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
            )
            role = text.rpartition(ROLE)[2]
            if role.startswith(f"You are the {key} reviewer."):
                found.append(role)
    return found


@pytest.fixture
def review(settings, tmp_path, workspace, fake_model, alice):
    scenario.install(
        fake_model,
        overrides={
            "security": scenario.reviewer(
                [scenario.sql_finding(), scenario.permission_finding(), secret_finding()],
                path="shop/search.py",
                name="sec",
            )
        },
    )
    return scenario.sample_reviews(
        settings, tmp_path, workspace, fake_model, alice, tier="thorough"
    )


def _at(review_round, path, line):
    """The finding kept for a location (the one people decide; duplicates follow it)."""
    return ReviewNode.objects.get(
        round=review_round, path=path, start_line=line, duplicate_of__isnull=True
    )


def test_people_decide_the_admin_accepts_a_proposal_and_the_next_round_carries_it(
    review, fake_model, workspace, alice, client_for, member_factory
):
    first = review()
    secret = _at(first, "shop/search.py", 7)
    permission = _at(first, "shop/views.py", 13)
    # The secret scanner found the key too: its finding is kept, crediting the security
    # reviewer, whose own words are on the merged duplicate.
    assert "security" in secret.credited_agents or secret.stream.name == "security"
    assert permission.stream.name == "security"
    node_dismiss(
        node=secret,
        user=alice,
        reason="A revoked key the demo fixtures use; the scanner's allow-list knows it.",
    )
    node_resolve(node=permission, user=alice, reason="delete_order_view checks can_delete now.")

    # A non-admin opening the page sees no proposals and makes none.
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    page = f"/w/{workspace.slug}/settings/reviewers/security/"
    assert "Proposed few-shots" not in client_for(bob).get(page).content.decode()
    assert not FewShotProposal.objects.exists()

    admin = client_for(alice)
    html = admin.get(page).content.decode()
    assert "Proposed few-shots" in html
    waiting = {
        p.source_node_id: p
        for p in FewShotProposal.objects.filter(reviewer__key="security", status="proposed")
    }
    assert {secret.pk, permission.pk} <= set(waiting)
    dismissed = waiting[secret.pk]
    assert dismissed.kind == "bad"
    assert dismissed.bad == "Hard-coded API key. Move the key to the environment and rotate it."
    assert "A revoked key the demo fixtures use" in dismissed.good
    # The code at the finding's lines, from the round's stored diff, with the key redacted.
    assert "    7  API_KEY = " in dismissed.excerpt and "[REDACTED:" in dismissed.excerpt
    assert KEY not in dismissed.excerpt and KEY not in html
    assert waiting[permission.pk].kind == "good"
    assert "delete_order_view checks can_delete now" in waiting[permission.pk].good

    # A non-admin cannot accept it.
    refused = client_for(bob).post(
        f"{page}proposals/{dismissed.pk}/",
        {
            "action": "accept",
            **{f"proposal-{dismissed.pk}-{k}": v for k, v in dismissed.shot().items()},
        },
    )
    assert refused.status_code == 403
    assert ReviewerConfig.objects.get(workspace=workspace, key="security").few_shots == []

    admin = client_for(alice)
    accepted = admin.post(
        f"{page}proposals/{dismissed.pk}/",
        {
            "action": "accept",
            **{f"proposal-{dismissed.pk}-{k}": v for k, v in dismissed.shot().items()},
        },
    )
    assert accepted.status_code == 302
    assert AuditEvent.objects.filter(action="reviewers.few_shot_accepted").count() == 1
    config = ReviewerConfig.objects.get(workspace=workspace, key="security")
    assert config.few_shots == [dismissed.shot()]

    since = len(fake_model.recorded("openai"))
    before = _roles(fake_model, "security")
    assert before and all("Calibration example" not in role for role in before)
    review()
    roles = _roles(fake_model, "security", since)
    assert roles, "the security reviewer ran again"
    role = roles[0]
    # The excerpt is pull-request code: fenced as untrusted data inside the instructions.
    example = role.split("Calibration example 1:\n", 1)[1]
    assert example.startswith("<<<UNTRUSTED ") and "source=calibration example 1>>>" in example
    assert dismissed.excerpt in example.split("A good verdict:")[0]
    assert f"A good verdict: {dismissed.good}" in role
    assert "A verdict to avoid: Hard-coded API key. Move the key to the environment" in role
    # Only that reviewer carries it, and the key never left in any request.
    assert all(dismissed.excerpt not in r for r in _roles(fake_model, "implementation", since))
    assert KEY not in fake_model.sent_text()
