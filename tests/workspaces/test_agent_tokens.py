"""Agents' tokens: a name people recognise, a role never above reviewer, and every act named
as the agent's for its person; the rules as properties, the API as a client sees them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrails.models import AuditEvent
from guardrails.rules import Policy, policy_for_requester
from workspaces.rules import ROLE_RANK, Role, RuleError, agent_name_problem, agent_role
from workspaces.services import api_token_create


@given(st.sampled_from(list(Role)))
def test_an_agent_never_acts_above_a_reviewer(role):
    capped = Role(agent_role(role.value))
    assert ROLE_RANK[capped] <= ROLE_RANK[Role.REVIEWER]
    assert ROLE_RANK[capped] == min(ROLE_RANK[role], ROLE_RANK[Role.REVIEWER])


@given(st.sampled_from(list(Policy)), st.booleans())
def test_an_agent_never_acts_on_its_own_authority(policy, by_agent):
    effective = policy_for_requester(policy, by_agent=by_agent)
    if by_agent:
        assert effective != Policy.ALLOW
        assert (effective == Policy.DENY) == (policy == Policy.DENY)
    else:
        assert effective == policy


@pytest.mark.parametrize(
    "name,ok",
    [
        ("claude-code on alice's laptop", True),
        ("codex (ci)", True),
        ("", False),
        (" leading space", False),
        ("x" * 41, False),
        ("<script>", False),
        ("new\nline", False),
    ],
)
def test_agent_names(name, ok):
    assert (agent_name_problem(name) == "") == ok


@pytest.mark.django_db
def test_an_agents_token_is_capped_and_named(client, workspace, alice):
    # alice owns the workspace; her agent may review but not administer or approve.
    with pytest.raises(RuleError):
        api_token_create(user=alice, name="bad", agent_name="<bad>")
    _, secret = api_token_create(user=alice, name="laptop", agent_name="claude-code")
    headers = {"Authorization": f"Bearer {secret}"}
    base = f"/api/v1/workspaces/{workspace.slug}"
    assert client.get(f"{base}/reviews", headers=headers).status_code == 200
    refused = client.post(f"{base}/approvals/1/approve", {}, "application/json", headers=headers)
    assert refused.status_code == 403
    assert "reviewer" in refused.json()["detail"]
    denied = AuditEvent.objects.filter(action="permission.denied").latest("id")
    assert denied.actor_label == "agent claude-code for alice@example.com"
    created = AuditEvent.objects.get(action="tokens.created", payload__agent="claude-code")
    assert created.actor_label == "alice@example.com"


@pytest.mark.django_db
def test_the_tokens_page_issues_an_agents_token(client, alice):
    client.force_login(alice)
    page = client.post(
        "/account/tokens/", {"action": "create", "name": "laptop", "agent_name": "claude-code"}
    )
    html = page.content.decode()
    assert "Copy your new token now" in html
    assert "agent claude-code" in html  # the table says who the token acts as
    bad = client.post("/account/tokens/", {"action": "create", "name": "x", "agent_name": "<b>"})
    assert "starts with a letter or digit" in bad.content.decode()
    assert alice.api_tokens.get().agent_name == "claude-code"
