"""A person accepts an intended API break: on the page, over the API, never by an agent; the
axis warns, the verdict follows, the audit trail says who and why, and a re-decided round
keeps the acceptance only while it covers every break."""

from __future__ import annotations

import anyio
import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from config.application_errors import ApplicationError
from guardrails.models import AuditEvent
from reviews.domain import api_breaks
from reviews.domain.types import AxisName, AxisResult
from reviews.mcp import tools
from reviews.mcp.server import build_server
from reviews.models import AxisResult as AxisRow
from reviews.models import Verdict, VerdictChange
from reviews.services.axes import axis_record
from reviews.services.spaces import space_status_refresh
from reviews.services.verdicts import round_finalise
from workspaces.services import api_token_create

BREAKS = {
    "changes": [
        {"source": "python", "severity": "breaking", "where": "lib.stop", "message": "removed"},
        {"source": "python", "severity": "additive", "where": "lib.halt", "message": "added"},
    ]
}


def _blocked(review_factory, workspace):
    review_round = review_factory(workspace, tier="light")
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.FAIL,
        source="deterministic",
        details=BREAKS,
    )
    round_finalise(review_round=review_round)
    review_round.state = "finished"
    review_round.save(update_fields=["state"])
    space_status_refresh(space=review_round.space)
    assert Verdict.objects.get(round=review_round).level == "block"
    return review_round


def _url(workspace, review_round, api: bool = False) -> str:
    if api:
        return (
            f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}"
            f"/rounds/{review_round.number}/api-breaks/accept"
        )
    return (
        f"/w/{workspace.slug}/reviews/{review_round.space_id}/rounds/"
        f"{review_round.number}/api-breaks/accept/"
    )


def test_a_triager_accepts_on_the_page_and_the_verdict_follows(
    review_factory, workspace, member_factory, client_for
):
    review_round = _blocked(review_factory, workspace)
    triager = member_factory(workspace, "reviewer", "lead@example.com")
    page = client_for(triager).get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    assert "Accept these breaks" in page.content.decode()

    response = client_for(triager).post(
        _url(workspace, review_round), {"reason": "  v2 drops stop(); callers were told in 1.9  "}
    )
    assert response.status_code == 302
    row = AxisRow.objects.get(round=review_round, axis="apiContract")
    assert row.result == "warn"
    assert row.details["accepted"]["by"] == "lead@example.com"
    assert row.details["accepted"]["reason"] == "v2 drops stop(); callers were told in 1.9"
    assert [c["severity"] for c in row.details["changes"]] == ["accepted", "additive"]
    assert Verdict.objects.get(round=review_round).level == "ship"
    change = VerdictChange.objects.get(round=review_round, new_level="ship")
    assert change.reason.startswith("API break accepted by lead@example.com")
    event = AuditEvent.objects.get(action="api.break_accepted")
    assert event.payload["breaks"] == ["lib.stop"] and event.actor_label == "lead@example.com"
    # The page says so, in words, and offers nothing more to accept.
    html = client_for(triager).get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    text = html.content.decode()
    assert "by lead@example.com: v2 drops stop()" in text and "Accept these breaks" not in text


def test_a_viewer_an_agent_and_a_reasonless_request_are_refused(
    review_factory, workspace, member_factory, client_for
):
    review_round = _blocked(review_factory, workspace)
    viewer = member_factory(workspace, "viewer", "viewer@example.com")
    page = client_for(viewer).get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    assert "Accept these breaks" not in page.content.decode()
    refused = client_for(viewer).post(_url(workspace, review_round), {"reason": "because"})
    assert refused.status_code == 403

    lead = member_factory(workspace, "reviewer", "lead@example.com")
    agent = Client(
        headers={
            "Authorization": f"Bearer {api_token_create(user=lead, name='a', agent_name='claude-code')[1]}"
        }
    )
    answer = agent.post(
        _url(workspace, review_round, api=True), {"reason": "ok"}, content_type="application/json"
    )
    assert answer.status_code == 403 and answer.json()["code"] == "agent_cannot_accept"

    person = Client(headers={"Authorization": f"Bearer {api_token_create(user=lead, name='p')[1]}"})
    blank = person.post(
        _url(workspace, review_round, api=True), {"reason": "   "}, content_type="application/json"
    )
    assert blank.status_code == 400 and blank.json()["code"] == "reason_required"
    assert AxisRow.objects.get(round=review_round, axis="apiContract").result == "fail"
    assert not AuditEvent.objects.filter(action="api.break_accepted").exists()

    done = person.post(
        _url(workspace, review_round, api=True),
        {"reason": "pre-1.0, documented"},
        content_type="application/json",
    )
    assert done.status_code == 200, done.content
    assert done.json() | {"space": 0} == {
        "space": 0,
        "round": review_round.number,
        "result": "warn",
        "accepted": ["lib.stop"],
        "verdict": "ship",
    }
    again = person.post(
        _url(workspace, review_round, api=True), {"reason": "x"}, content_type="application/json"
    )
    assert again.status_code == 409 and again.json()["code"] == "no_api_break"


wheres = st.lists(st.sampled_from(["a.f", "a.g", "b:H", "c.K.m"]), min_size=1, unique=True)


@given(wheres, wheres)
def test_an_acceptance_is_carried_only_while_it_covers_every_break(first, later):
    details = {"changes": [{"severity": "breaking", "where": w, "message": "x"} for w in first]}
    result, accepted = api_breaks.accepted(details, by="p", reason="r", at="t")
    assert result is AxisResult.WARN and api_breaks.breaking(accepted) == []
    recomputed = {"changes": [{"severity": "breaking", "where": w, "message": "x"} for w in later]}
    kept = api_breaks.carried(accepted, recomputed)
    if set(later) <= set(first):
        assert kept is not None and api_breaks.breaking(kept[1]) == []
    else:
        assert kept is None


def test_over_mcp_a_persons_token_accepts_and_an_agents_is_refused(
    review_factory, workspace, member_factory
):
    """The tool as the MCP server calls it, with callers loaded from real tokens; and the
    server lists it with its input schema."""
    review_round = _blocked(review_factory, workspace)
    lead = member_factory(workspace, "reviewer", "lead@example.com")
    agent = tools.caller_for(
        api_token_create(user=lead, name="a", agent_name="claude-code")[1], workspace.slug
    )
    with pytest.raises(ApplicationError) as refused:
        tools.accept_api_breaks(agent, review_round.space_id, "the agent thinks so")
    assert refused.value.code == "agent_cannot_accept"

    person = tools.caller_for(api_token_create(user=lead, name="p")[1], workspace.slug)
    answer = tools.accept_api_breaks(person, review_round.space_id, "documented in 2.0 notes")
    assert (answer.result, answer.accepted, answer.verdict) == ("warn", ["lib.stop"], "ship")
    assert AuditEvent.objects.filter(action="api.break_accepted").count() == 1

    server = build_server(lambda ctx: ("unused", workspace.slug))
    listed = {t.name: t for t in anyio.run(server.list_tools)}
    schema = listed["accept_api_breaks"].input_schema
    assert schema["properties"]["reason"]["minLength"] == 1 and "space" in schema["required"]
