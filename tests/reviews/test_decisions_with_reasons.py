"""Dismissing a finding that decides the verdict needs a reason, on the page, the API and MCP;
the reason and who decided then show on the card and in the report, and the verdict follows."""

from __future__ import annotations

import anyio
import pytest

from config.application_errors import ApplicationError
from guardrails.models import AuditEvent
from reviews.domain import consensus
from reviews.domain.round_states import RoundState
from reviews.mcp import tools
from reviews.models import ReviewNode
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page
from reviews.services.node_recording import node_record
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


# -- a workspace rule: dismissing a P0 needs an approver (issue 37, item 2) ------------------


@pytest.fixture
def approver_rule(blocked, workspace, member_factory):
    """The blocked round in a workspace whose rule keeps dismissing a P0 for approvers; vera
    is an approver."""
    workspace.p0_dismissal_needs_approver = True
    workspace.save(update_fields=["p0_dismissal_needs_approver"])
    vera = member_factory(workspace, "approver", "vera@example.com")
    return (*blocked, vera)


REFUSAL = "Dismissing a P0 finding needs an approver in this workspace"


def _still_blocked(review_round, p0):
    p0.refresh_from_db()
    review_round.verdict.refresh_from_db()
    assert (p0.status, p0.decided_by, review_round.verdict.level) == ("open", None, "block")


def test_the_page_tells_a_reviewer_an_approver_must_dismiss_the_p0(
    approver_rule, workspace, client_for
):
    review_round, p0, p3, bob, _ = approver_rule
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{p0.pk}/"
    reason = "False positive: the ORM escapes it."
    page = client_for(bob).post(url, {"action": "dismiss", "reason": reason}, follow=True)
    assert page.status_code == 200 and REFUSAL in page.content.decode()
    _still_blocked(review_round, p0)
    # With htmx, the refusal is a fragment in the page's error region, with its 403.
    fragment = client_for(bob).post(
        url, {"action": "dismiss", "reason": reason}, HTTP_HX_REQUEST="true"
    )
    assert fragment.status_code == 403 and REFUSAL in fragment.content.decode()
    assert "<html" not in fragment.content.decode()
    _still_blocked(review_round, p0)
    # Audited as a refusal, not as a dismissal.
    denied = AuditEvent.objects.filter(action="permission.denied", target_id=str(p0.pk))
    assert denied.count() == 2
    assert denied.first().payload == {
        "attempted": "dismiss a P0 finding",
        "role": "reviewer",
        "needs": "approver",
        "rule": "p0_dismissal_needs_approver",
    }
    assert not AuditEvent.objects.filter(action="node.dismissed").exists()
    # The rule is about P0s: the P3 goes as before, and bob may still resolve the P0.
    client_for(bob).post(
        f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{p3.pk}/",
        {"action": "dismiss", "reason": ""},
    )
    assert ReviewNode.objects.get(pk=p3.pk).status == "dismissed"


def test_the_api_answers_403_with_the_reason_and_an_approver_may_dismiss(
    approver_rule, workspace, client_for
):
    review_round, p0, _, bob, vera = approver_rule
    url = (
        f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}/nodes/{p0.pk}/dismiss"
    )
    body = {"reason": "Covered by the WAF rule 942100."}
    refused = client_for(bob).post(url, body, content_type="application/json")
    assert refused.status_code == 403
    assert refused["Content-Type"].startswith("application/json")
    assert refused.json()["code"] == "approver_required"
    assert refused.json()["detail"].startswith(REFUSAL)
    _still_blocked(review_round, p0)

    done = client_for(vera).post(url, body, content_type="application/json")
    assert done.status_code == 200 and done.json()["status"] == "dismissed"
    p0.refresh_from_db()
    assert (p0.decided_by, p0.decision_reason) == (vera, body["reason"])
    review_round.verdict.refresh_from_db()
    assert review_round.verdict.level == "ship"


@pytest.mark.django_db(transaction=True)
def test_mcp_answers_a_tool_error(approver_rule, workspace):
    """Through the MCP server itself (the SDK's in-memory client): the dismiss tool answers an
    error saying why; the plain tool function raises the same refusal."""
    from mcp.client.client import Client

    from reviews.mcp.server import build_server

    review_round, p0, _, bob, vera = approver_rule
    secrets = {
        "bob": api_token_create(user=bob, name="me")[1],
        "vera": api_token_create(user=vera, name="me")[1],
    }
    person = tools.caller_for(secrets["bob"], workspace.slug)
    with pytest.raises(ApplicationError) as refused:
        tools.act_on_node(
            person, review_round.space_id, p0.pk, consensus.Action.DISMISS, "Not reachable."
        )
    assert (refused.value.code, refused.value.http_status) == ("approver_required", 403)

    async def dismiss(who: str):
        server = build_server(lambda ctx: (secrets[who], workspace.slug))
        async with Client(server) as client:
            return await client.call_tool(
                "dismiss_review_node",
                {"space": review_round.space_id, "node": p0.pk, "reason": "Not reachable."},
            )

    answer = anyio.run(dismiss, "bob")
    assert answer.is_error
    text = " ".join(getattr(c, "text", "") for c in answer.content)
    assert REFUSAL in text and "[approver_required]" in text
    _still_blocked(review_round, p0)

    done = anyio.run(dismiss, "vera")
    assert not done.is_error, done.content
    assert ReviewNode.objects.get(pk=p0.pk).status == "dismissed"
