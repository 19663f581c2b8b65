"""Published once, per round: whatever the selection, the number of requests or the retries,
a round becomes one GitHub review, executed by the app identity on a person's request and
another's approval. Local repositories download their report instead."""

from __future__ import annotations

import pytest

from guardrails.audit import Target
from guardrails.models import ActionPolicy, ApprovalRequest, AuditEvent
from guardrails.presence import presence_touch
from guardrails.services.approvals import approval_decide
from guardrails.services.checkpoint import checkpoint
from guardrails.services.execution import approval_execute
from reviews.models import PublishRecord, ReviewRound, ReviewSpace
from reviews.services.node_recording import node_record
from reviews.services.publish_plans import AlreadyPublished, publish_plan_current
from reviews.services.publishing import publish_request, publish_review
from reviews.services.rounds import round_start
from reviews.services.spaces import pull_request_upsert, space_get_or_create, space_status_refresh
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload
from workspaces.models import Repository


def _api(space) -> str:
    return f"/api/v1/workspaces/{space.workspace.slug}/reviews/{space.pk}/publish-requests"


@pytest.fixture
def published(publishable, fake_github, client_for, django_capture_on_commit_callbacks):
    """bob asks (through the API), vera approves, the approved request executes."""
    space, review_round, bob, vera = publishable
    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    asked = client_for(bob).post(
        _api(space), {"selection": "all_open", "approve_on_ship": True}, "application/json"
    )
    assert asked.status_code == 202, asked.content
    request = ApprovalRequest.objects.get()
    approval_decide(request=request, approver=vera, decision="approve", reason="checked")
    with django_capture_on_commit_callbacks(execute=True):
        approval_execute(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "executed", request.error
    [review] = fake_github.reviews("acme", "app", 5)
    return space, request, review


def test_a_published_round_is_refused_again_for_any_selection(published, client_for, fake_github):
    space, request, review = published
    bob = request.requester
    space.refresh_from_db()
    assert space.status == "completed"
    message = f"Round 1 was already published to GitHub: {review['html_url']}"
    for selection, approve in (("consensus", False), ("all_open", True), ("all_open", False)):
        again = client_for(bob).post(
            _api(space), {"selection": selection, "approve_on_ship": approve}, "application/json"
        )
        assert again.status_code == 409
        assert again.json()["detail"].startswith(message)
    # The page refuses too, with the same words, and offers no button.
    page = client_for(bob).get(
        f"/w/{space.workspace.slug}/reviews/{space.pk}/publish/", follow=True
    )
    assert message in page.content.decode()
    assert "Publish to GitHub…" not in page.content.decode()
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    assert ApprovalRequest.objects.count() == 1


def test_the_page_and_the_json_say_who_asked_who_approved_and_when(published, client_for):
    space, request, review = published
    record = PublishRecord.objects.get()
    assert record.state == "posted" and record.html_url == review["html_url"]
    assert record.requested_by.email == "bob@example.com"
    assert record.approved_by.email == "vera@example.com"
    assert record.approval_request_id == request.pk
    page = client_for(request.requester).get(f"/w/{space.workspace.slug}/reviews/{space.pk}/")
    html = page.content.decode()
    assert "✓ Published to GitHub →" in html and f'href="{review["html_url"]}"' in html
    assert "requested by bob@example.com" in html and "approved by vera@example.com" in html
    assert f"posted {record.posted_at:%Y-%m-%d %H:%M} UTC" in html
    assert "Publish to GitHub…" not in html and "Publishing now would post" not in html
    export = client_for(request.requester).get(
        f"/w/{space.workspace.slug}/reviews/{space.pk}/report.json"
    )
    publication = export.json()["space"]["publication"]
    assert publication["url"] == review["html_url"] and publication["round"] == 1
    assert publication["requested_by"] == "bob@example.com"
    assert publication["approved_by"] == "vera@example.com"


def test_one_executed_event_by_the_app_naming_requester_and_approver(published):
    space, request, review = published
    [executed] = AuditEvent.objects.filter(action__endswith=".executed")
    assert executed.action == "prPublish.executed"
    assert executed.actor_kind == "app" and executed.actor_label == "quorum (app identity)"
    assert executed.actor_id is None
    assert executed.payload["requester"] == "bob@example.com"
    assert executed.payload["approvers"] == ["vera@example.com"]
    assert executed.payload["result"]["url"] == review["html_url"]
    assert executed.payload["result"]["round"] == 1


def test_an_approval_that_slipped_past_the_request_check_posts_nothing(
    published, fake_github, django_capture_on_commit_callbacks
):
    """A second approved request for the same round (made around publish_request) fails at
    execution with the reason: the round's one publication is already on GitHub."""
    space, first, review = published
    bob, vera = first.requester, first.decisions.get().approver
    current = publish_plan_current(space=space, selection="consensus", approve_on_ship=False)
    result = checkpoint(
        action="prPublish",
        actor=bob,
        workspace=space.workspace,
        target=Target("reviewspace", str(space.pk), str(space.pull_request)),
        payload=current.payload(space=space, selection="consensus", approve_on_ship=False),
    )
    assert result.outcome == "pending"
    approval_decide(request=result.request, approver=vera, decision="approve")
    with django_capture_on_commit_callbacks(execute=True):
        approval_execute(request_id=result.request.pk)
    second = ApprovalRequest.objects.get(pk=result.request.pk)
    assert second.status == "failed"
    assert second.error.startswith(f"Round 1 was already published to GitHub: {review['html_url']}")
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    assert AuditEvent.objects.filter(action="prPublish.executed").count() == 1
    assert PublishRecord.objects.count() == 1
    space.refresh_from_db()
    assert space.status == "completed"


def test_while_a_request_waits_another_is_refused_whatever_its_selection(
    publishable, client_for, member_factory, workspace
):
    space, _, bob, vera = publishable
    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    first = client_for(bob).post(_api(space), {"selection": "all_open"}, "application/json")
    assert first.status_code == 202
    rita = member_factory(workspace, "reviewer", "rita@example.com")
    second = client_for(rita).post(_api(space), {"selection": "consensus"}, "application/json")
    assert second.status_code == 400
    assert second.json()["detail"] == "A publish request is already waiting for an approver."
    assert ApprovalRequest.objects.count() == 1


def test_a_repeated_publish_returns_the_rounds_record_whatever_the_selection(
    publishable, fake_github, alice
):
    space, *_ = publishable
    first = publish_review(space=space, selection="all_open", approve_on_ship=True, actor=alice)
    again = publish_review(space=space, selection="consensus", approve_on_ship=False, actor=alice)
    assert again.pk == first.pk and again.selection == "all_open"
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    space.refresh_from_db()
    assert space.status == "completed"


def test_a_new_round_can_be_published_once_more(publishable, fake_github, alice):
    space, review_round, *_ = publishable
    publish_review(space=space, selection="all_open", approve_on_ship=True, actor=alice)
    with pytest.raises(AlreadyPublished, match="Round 1 was already published"):
        publish_request(space=space, selection="consensus", approve_on_ship=False, actor=alice)
    second = round_start(space=space, head_sha=review_round.head_sha, tier="light")
    round_finalise(review_round=second)
    ReviewRound.objects.filter(pk=second.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)
    assert ReviewSpace.objects.get(pk=space.pk).status == "reviewed"
    record = publish_review(space=space, selection="all_open", approve_on_ship=True, actor=alice)
    assert record.round_id == second.pk and record.state == "posted"
    assert len(fake_github.reviews("acme", "app", 5)) == 2


def test_with_an_allow_rule_the_app_still_executes_once(publishable, fake_github, workspace):
    space, _, bob, _ = publishable
    ActionPolicy.objects.create(workspace=workspace, action_class="prPublish", policy="allow")
    result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert result.outcome == "allowed"
    executed = AuditEvent.objects.get(action="prPublish.executed")
    assert executed.actor_kind == "app" and executed.payload["requester"] == "bob@example.com"
    assert executed.payload["approvers"] == []
    assert PublishRecord.objects.get().approved_by is None
    with pytest.raises(AlreadyPublished):
        publish_request(space=space, selection="consensus", approve_on_ship=False, actor=bob)
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    space.refresh_from_db()
    assert space.status == "completed"


@pytest.fixture
def local_review(workspace, tmp_path):
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(tmp_path / "shop")
    )
    pr = pull_request_upsert(repository=repository, base_ref="main", head_ref="feature")
    space = space_get_or_create(pull_request=pr)
    review_round = round_start(space=space, head_sha="c" * 40, tier="light")
    stream = review_round.streams.create(name="implementation", agent="implementation")
    node_record(stream=stream, payload=node_payload(anchor=None), file_lines={})
    round_finalise(review_round=review_round)
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)
    return space


def test_a_local_review_offers_the_report_download_and_never_github(
    local_review, client_for, alice, workspace
):
    space = local_review
    client = client_for(alice)
    html = client.get(f"/w/{workspace.slug}/reviews/{space.pk}/").content.decode()
    assert "Publish to GitHub…" not in html and "Publishing now would post" not in html
    assert "A local repository has no pull request on GitHub: nothing is published." in html
    assert ">Download markdown</a>" in html and ">Download JSON</a>" in html
    assert f"/w/{workspace.slug}/reviews/{space.pk}/report.json?download=1" in html

    refused = client.get(f"/w/{workspace.slug}/reviews/{space.pk}/publish/", follow=True)
    assert "there is no pull request on GitHub to publish to" in refused.content.decode()
    api = client.post(_api(space), {"selection": "all_open"}, "application/json")
    assert api.status_code == 400
    assert "Download the report (markdown or JSON)" in api.json()["detail"]
    assert not ApprovalRequest.objects.exists()

    download = client.get(f"/w/{workspace.slug}/reviews/{space.pk}/report.json?download=1")
    assert download["Content-Disposition"] == (
        f'attachment; filename="quorum-review-{space.pk}.json"'
    )
    data = download.json()
    assert data["schema"] == "quorum.review/v1" and data["space"]["publication"] is None
    assert data["verdict"]["level"] in ("ship", "hold", "block")
    markdown = client.get(f"/w/{workspace.slug}/reviews/{space.pk}/report.md?download=1")
    assert markdown["Content-Disposition"].startswith("attachment;")


def test_outsiders_cannot_download_the_report(local_review, client_for, charlie, workspace):
    response = client_for(charlie).get(f"/w/{workspace.slug}/reviews/{local_review.pk}/report.json")
    assert response.status_code == 404
