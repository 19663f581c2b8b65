"""The reviews API: list, read (quorum.review/v1), start, triage, requirements, axis submission."""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from reviews.models import AxisResult, ReviewNode
from reviews.services.axes import axis_record
from reviews.services.node_recording import node_record
from reviews.services.spaces import space_status_refresh
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload


@pytest.fixture
def finished(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace, tier="balanced")
    stream = stream_factory(review_round, "implementation")
    node = node_record(stream=stream, payload=node_payload(priority="P2")).node
    from reviews.domain.types import AxisName
    from reviews.domain.types import AxisResult as Result

    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=Result.UNAVAILABLE,
        source="deterministic",
    )
    round_finalise(review_round=review_round)
    review_round.state = "finished"
    review_round.save(update_fields=["state"])
    space_status_refresh(space=review_round.space)
    return review_round, node


def test_list_and_read_in_the_versioned_schema(finished, workspace, alice, client_for):
    review_round, node = finished
    client = client_for(alice)
    listing = client.get(f"/api/v1/workspaces/{workspace.slug}/reviews").json()
    assert listing[0]["id"] == review_round.space_id and listing[0]["open_by_priority"]["P2"] == 1
    data = client.get(f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}").json()
    assert data["schema"] == "quorum.review/v1"
    assert data["verdict"]["level"] == "hold"  # gated apiContract unavailable
    assert data["nodes"][0]["id"] == node.pk and data["nodes"][0]["reviewers"] == ["implementation"]


def test_a_ci_result_for_a_gated_axis_changes_the_verdict_and_is_audited(
    finished, workspace, member_factory, client_for
):
    review_round, _ = finished
    ci = member_factory(workspace, "reviewer", "ci-bot@example.com")
    url = f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}/axes/apiContract"
    response = client_for(ci).post(
        url,
        {"result": "pass", "evidence_url": "https://ci.example/run/1"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    row = AxisResult.objects.get(round=review_round, axis="apiContract")
    assert (row.result, row.source, row.submitted_by_id) == ("pass", "submitted", ci.pk)
    review_round.verdict.refresh_from_db()
    assert review_round.verdict.level == "ship"
    assert AuditEvent.objects.filter(action="axis.submitted", actor_id=ci.pk).exists()
    bad = client_for(ci).post(
        url.replace("apiContract", "security"), {"result": "pass"}, content_type="application/json"
    )
    assert bad.status_code == 422


def test_triage_through_the_api_follows_the_roles(finished, workspace, member_factory, client_for):
    review_round, node = finished
    base = f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}/nodes/{node.pk}"
    viewer = member_factory(workspace, "viewer")
    assert (
        client_for(viewer)
        .post(f"{base}/dismiss", {"reason": "x"}, content_type="application/json")
        .status_code
        == 403
    )
    reviewer = member_factory(workspace, "reviewer")
    ok = client_for(reviewer).post(
        f"{base}/dismiss", {"reason": "noise"}, content_type="application/json"
    )
    assert ok.json() == {"id": node.pk, "status": "dismissed"}
    again = client_for(reviewer).post(f"{base}/dismiss", {}, content_type="application/json")
    assert again.status_code == 400 and "dismissed" in again.json()["detail"]
    assert ReviewNode.objects.get(pk=node.pk).status == "dismissed"


def test_starting_a_review_checks_input_and_role(workspace, member_factory, client_for):
    viewer = member_factory(workspace, "viewer")
    url = f"/api/v1/workspaces/{workspace.slug}/reviews"
    assert (
        client_for(viewer)
        .post(url, {"repository": 1, "number": 1}, content_type="application/json")
        .status_code
        == 403
    )
    reviewer = member_factory(workspace, "reviewer")
    missing = client_for(reviewer).post(
        url, {"repository": 999, "number": 1}, content_type="application/json"
    )
    assert missing.status_code == 404
    typo = client_for(reviewer).post(
        url, {"repository": 1, "numbr": 1}, content_type="application/json"
    )
    assert typo.status_code == 422
