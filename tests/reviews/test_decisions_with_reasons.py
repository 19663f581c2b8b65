"""Dismissing a finding that decides the verdict needs a reason, on the page, the API and MCP;
the reason and who decided then show on the card and in the report, and the verdict follows."""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from reviews.domain import consensus
from reviews.domain.errors import ApplicationError
from reviews.domain.round_states import RoundState
from reviews.mcp_server import tools
from reviews.models import ReviewNode
from reviews.reporting import report_markdown
from reviews.selectors import review_page
from reviews.services.nodes import node_record
from reviews.services.rounds import round_transition
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload
from workspaces.services import api_token_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def blocked(review_factory, stream_factory, workspace, member_factory):
    """A finished round blocked by one P0 (and a P3 beside it); bob is a reviewer."""
    workspace.gated_axes = []
    workspace.save(update_fields=["gated_axes"])
    review_round = review_factory(workspace=workspace)
    stream = stream_factory(review_round, "implementation")
    p0 = node_record(
        stream=stream,
        payload=node_payload(
            priority="P0",
            confidence=0.9,
            title="SQL built from the search term",
            anchor={"path": "shop/search.py", "start_line": 12, "end_line": 12},
        ),
        file_lines={"shop/search.py": 40},
    ).node
    p3 = node_record(
        stream=stream,
        payload=node_payload(
            priority="P3",
            type="suggestion",
            title="Name the constant",
            anchor={"path": "shop/search.py", "start_line": 3, "end_line": 3},
        ),
        file_lines={"shop/search.py": 40},
    ).node
    assert round_transition(review_round, RoundState.RUNNING)
    assert round_transition(review_round, RoundState.FINISHED)
    assert round_finalise(review_round=review_round).level == "block"
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    return review_round, p0, p3, bob


def test_the_page_refuses_a_p0_dismissal_without_a_reason(blocked, workspace, client_for):
    review_round, p0, _, bob = blocked
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{p0.pk}/"
    answer = client_for(bob).post(url, {"action": "dismiss", "reason": "  "}, follow=True)
    assert "Dismissing a P0 finding needs a reason" in answer.content.decode()
    p0.refresh_from_db()
    assert p0.status == "open"
    assert review_round.verdict.level == "block"


def test_the_api_and_mcp_refuse_it_too(blocked, workspace, client_for):
    review_round, p0, _, bob = blocked
    api = client_for(bob).post(
        f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}/nodes/{p0.pk}/dismiss",
        {"reason": ""},
        content_type="application/json",
    )
    assert api.status_code == 400 and api.json()["code"] == "reason_required"
    person = tools.caller_for(api_token_create(user=bob, name="me")[1], workspace.slug)
    with pytest.raises(ApplicationError) as refused:
        tools.act_on_node(person, review_round.space_id, p0.pk, consensus.Action.DISMISS, "")
    assert refused.value.code == "reason_required"
    assert ReviewNode.objects.get(pk=p0.pk).status == "open"


def test_a_p3_may_be_dismissed_without_one(blocked, workspace, client_for):
    review_round, _, p3, bob = blocked
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{p3.pk}/"
    client_for(bob).post(url, {"action": "dismiss", "reason": ""})
    assert ReviewNode.objects.get(pk=p3.pk).status == "dismissed"


def test_with_a_reason_it_shows_on_the_card_and_in_the_report_and_the_verdict_follows(
    blocked, workspace, client_for
):
    review_round, p0, _, bob = blocked
    client = client_for(bob)
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{p0.pk}/"
    reason = "The term is escaped by the ORM layer below; see db.quote."
    client.post(url, {"action": "dismiss", "reason": reason})

    p0.refresh_from_db()
    assert (p0.status, p0.decided_by, p0.decision_reason) == ("dismissed", bob, reason)
    page = client.get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/").content.decode()
    assert "Dismissed by bob@example.com" in page and f"“{reason}”" in page
    report = report_markdown(review_page(space=review_round.space))
    assert "## Decisions" in report
    assert (
        f"Dismissed: P0 SQL built from the search term `shop/search.py:12` by bob@example.com: “{reason}”"
        in report
    )
    review_round.refresh_from_db()
    assert review_round.verdict.level == "ship"
    event = AuditEvent.objects.filter(action="node.dismissed").latest("id")
    assert event.payload.get("reason") == reason

    # Reopened, the decision no longer shows.
    client.post(url, {"action": "reopen", "reason": ""})
    p0.refresh_from_db()
    assert (p0.status, p0.decided_by, p0.decision_reason) == ("open", None, "")
