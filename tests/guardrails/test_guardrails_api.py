"""The guardrails API: same checkpoint, same rules, the API's publishing defaults."""

from __future__ import annotations

from guardrails.models import ApprovalRequest
from guardrails.presence import presence_touch


def test_publish_requests_default_to_consensus_without_approval(
    publishable, client_for, fake_github
):
    space, _, bob, vera = publishable
    url = f"/api/v1/workspaces/{space.workspace.slug}/reviews/{space.pk}/publish-requests"
    refused = client_for(bob).post(url, {}, content_type="application/json")
    assert refused.status_code == 409 and "No approver is connected" in refused.json()["detail"]

    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    created = client_for(bob).post(url, {}, content_type="application/json")
    assert created.status_code == 202
    request = created.json()["request"]
    assert (
        request["payload"]["selection"] == "consensus"
        and request["payload"]["approve_on_ship"] is False
    )

    listing = (
        client_for(vera)
        .get(f"/api/v1/workspaces/{space.workspace.slug}/approvals?status=pending")
        .json()
    )
    assert [r["id"] for r in listing] == [request["id"]]
    self_approval = client_for(bob).post(
        f"/api/v1/workspaces/{space.workspace.slug}/approvals/{request['id']}/approve",
        {},
        content_type="application/json",
    )
    assert self_approval.status_code == 403  # a reviewer may not decide at all
    approved = client_for(vera).post(
        f"/api/v1/workspaces/{space.workspace.slug}/approvals/{request['id']}/approve",
        {"reason": "ok"},
        content_type="application/json",
    )
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    assert ApprovalRequest.objects.get().decisions.get().approver == vera

    trail = (
        client_for(vera)
        .get(f"/api/v1/workspaces/{space.workspace.slug}/audit?action=approval.")
        .json()
    )
    assert [e["action"] for e in trail] == ["approval.approved", "approval.requested"]


def test_an_outsider_cannot_reach_requests_or_the_trail(publishable, charlie, client_for):
    space, *_ = publishable
    client = client_for(charlie)
    assert client.get(f"/api/v1/workspaces/{space.workspace.slug}/approvals").status_code == 404
    assert client.get(f"/api/v1/workspaces/{space.workspace.slug}/audit").status_code == 404
