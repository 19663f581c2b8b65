"""One person is not a quorum. Alice's agent `claude-code` adds a P0; her second agent
`opencode` and Alice herself (the API and the service MCP uses) try to confirm it: refused, the
finding stays open, and neither the verdict nor a consensus-only publish counts them. Bob, another
person, confirms: consensus_ready. The three enforcement places agree (the node service, the
finaliser's peer_confirmers, the publisher's plan)."""

from __future__ import annotations

import pytest

from reviews.domain import consensus
from reviews.models import ReviewNode
from reviews.selectors import node_view
from reviews.services.outside_agents import node_act_outside, node_add_outside
from reviews.services.publish_plans import node_records
from reviews.sources.publish_plan import _skip_reason
from tests.fixtures import node_payload
from workspaces.services import api_token_create
from workspaces.services.tokens import api_token_authenticate

pytestmark = pytest.mark.django_db


def _agent(user, name):
    _, secret = api_token_create(user=user, name=f"{name} token", agent_name=name)
    return api_token_authenticate(secret), secret


def _counted(node: ReviewNode) -> tuple[str, ...]:
    node = ReviewNode.objects.prefetch_related("confirmations").get(pk=node.pk)
    return consensus.peer_confirmers(node_view(node))


def test_one_persons_two_agents_and_the_person_confirm_nothing(
    publishable, alice, member_factory, client_for, workspace
):
    space, review_round, bob, _ = publishable
    review_round.refresh_from_db()
    claude, _ = _agent(alice, "claude-code")
    opencode, opencode_secret = _agent(alice, "opencode")
    added = node_add_outside(
        review_round=review_round,
        user=claude,
        payload=node_payload(
            priority="P0",
            title="Division by zero",
            anchor={"path": "calc.py", "start_line": 3, "end_line": 3},
        ),
    )
    assert added.stream.agent == f"agent:{alice.pk}:claude-code"

    for who in (opencode, alice):
        with pytest.raises(consensus.SelfConfirmationError, match="one voice"):
            node_act_outside(node=added, action=consensus.Action.CONFIRM, user=who)
    url = f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/nodes/{added.pk}/confirm"
    by_person = client_for(alice).post(url, {}, "application/json")
    by_agent = client_for(alice).post(
        url, {}, "application/json", HTTP_AUTHORIZATION=f"Bearer {opencode_secret}"
    )
    assert by_person.status_code == 400 and by_agent.status_code == 400, (
        by_person.content,
        by_agent.content,
    )
    added.refresh_from_db()
    assert added.status == "open"
    assert _counted(added) == ()
    record = next(r for r in node_records(review_round) if r.id == added.pk)
    assert _skip_reason(record, "consensus") is not None

    node_act_outside(node=added, action=consensus.Action.CONFIRM, user=bob)
    added.refresh_from_db()
    assert added.status == "consensus_ready"
    assert _counted(added) == (f"person:{bob.pk}",)
    record = next(r for r in node_records(review_round) if r.id == added.pk)
    assert _skip_reason(record, "consensus") is None


def test_a_row_written_around_the_service_is_still_one_voice(publishable, alice):
    """Confirmations by one person's agents that got into the table by another route count as
    one voice, and the author's person's as none."""
    _, review_round, bob, _ = publishable
    review_round.refresh_from_db()
    claude, _ = _agent(alice, "claude-code")
    node = node_add_outside(
        review_round=review_round,
        user=claude,
        payload=node_payload(anchor={"path": "calc.py", "start_line": 3, "end_line": 3}),
    )
    for agent in (f"person:{alice.pk}", f"agent:{alice.pk}:opencode"):
        node.confirmations.create(agent=agent, verdict="real")
    assert _counted(node) == ()
    for agent in (f"agent:{bob.pk}:codex", f"person:{bob.pk}"):
        node.confirmations.create(agent=agent, verdict="real")
    assert len(_counted(node)) == 1


def test_an_agents_api_token_may_confirm_but_not_decide(publishable, workspace, client):
    """Over the REST API an agent's token acts as the agent, as over MCP: resolving or
    dismissing is refused and changes nothing; confirming a peer's finding counts."""
    space, review_round, bob, _ = publishable
    node = ReviewNode.objects.get(round=review_round)
    _, secret = _agent(bob, "codex")
    base = f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/nodes/{node.pk}"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    for action in ("resolve", "dismiss"):
        refused = client.post(f"{base}/{action}", {"reason": "fixed"}, "application/json", **auth)
        assert refused.status_code in (400, 409), refused.content
        assert "only a person" in refused.json()["detail"]
    node.refresh_from_db()
    assert node.status == "open" and node.decided_by is None
    confirmed = client.post(f"{base}/confirm", {}, "application/json", **auth)
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "consensus_ready"
    assert node.confirmations.get().agent == f"agent:{bob.pk}:codex"
