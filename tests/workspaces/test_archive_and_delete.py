"""Administration that loses nothing by accident: disconnecting archives (reviews kept
read-only, reconnecting restores them), deleting for good is an owner's typed-name act that
leaves tombstones, and destructive buttons ask for a confirmation the server insists on."""

from __future__ import annotations

import pytest

from guardrails.audit import Actor, Target, audit_record
from guardrails.models import ApprovalRequest, AuditEvent
from guardrails.services.policies import policy_update
from reviews.models import NodeConfirmation, ReviewNode, ReviewRound, ReviewSpace
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm_by_person, node_dismiss, node_resolve
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload
from workspaces import services
from workspaces.models import ApiToken, Membership, Repository, Tombstone
from workspaces.services import repository_grant


@pytest.fixture(autouse=True)
def github_token(settings):
    settings.GITHUB_TOKEN, settings.GITHUB_APP_ID = "ghp_server", ""


@pytest.fixture
def triaged(workspace, alice, member_factory, review_factory, stream_factory):
    """A finished review of a GitHub repository with findings a person resolved, dismissed
    and confirmed: the repository is granted to the workspace so it can be reconnected."""
    review_round = review_factory(workspace, tier="light")
    repo = review_round.space.pull_request.repository
    repository_grant(workspace=workspace, full_name=repo.full_name)
    impl = stream_factory(review_round, "implementation")
    qual = stream_factory(review_round, "quality")
    nodes = [
        node_record(
            stream=impl if i % 2 else qual,
            payload=node_payload(
                title=f"Finding {i}",
                anchor={"path": f"pkg/m{i}.py", "start_line": 1, "end_line": 1},
            ),
        ).node
        for i in range(4)
    ]
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    node_resolve(node=nodes[0], user=bob, reason="fixed in the branch")
    node_dismiss(node=nodes[1], user=bob, reason="not reachable")
    node_confirm_by_person(node=nodes[2], user=bob)
    round_finalise(review_round=review_round)
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    return repo, review_round.space, nodes


def _state(repo):
    """Everything a repository's reviews hold, as comparable data."""
    return {
        "spaces": sorted(
            ReviewSpace.objects.filter(pull_request__repository=repo).values_list("pk", "status")
        ),
        "nodes": sorted(
            ReviewNode.objects.filter(space__pull_request__repository=repo).values_list(
                "pk", "status", "title"
            )
        ),
        "confirmations": sorted(
            NodeConfirmation.objects.filter(node__space__pull_request__repository=repo).values_list(
                "pk", "agent", "verdict"
            )
        ),
    }


def _disconnect(client, workspace, repo, **extra):
    return client.post(
        f"/w/{workspace.slug}/settings/repositories/{repo.pk}/disconnect/",
        {"confirm": "yes", **extra},
    )


# -- disconnect = archive ---------------------------------------------------------------------


def test_disconnect_then_reconnect_restores_every_review_finding_and_decision(
    triaged, workspace, alice, client_for
):
    repo, space, _ = triaged
    before = _state(repo)
    assert len(before["nodes"]) == 4 and len(before["confirmations"]) == 1
    client = client_for(alice)

    page = client.get(f"/w/{workspace.slug}/settings/repositories/{repo.pk}/disconnect/")
    assert page.status_code == 200
    assert "Nothing is deleted: its 1 review (4 findings, 2 triage decisions)" in (
        page.content.decode()
    )
    response = _disconnect(client, workspace, repo)
    assert response.status_code == 302
    repo.refresh_from_db()
    assert repo.archived_at is not None
    assert _state(repo) == before  # nothing deleted

    event = AuditEvent.objects.get(workspace=workspace, action="repositories.archived")
    assert event.target_label == repo.full_name
    assert event.payload["kept"] == {
        "review_spaces": 1,
        "rounds": 1,
        "findings": 4,
        "triage_decisions": 2,
        "confirmations": 1,
    }
    listing = client.get(f"/w/{workspace.slug}/settings/repositories/").content.decode()
    assert "Disconnected repositories" in listing and "Connect again" in listing

    # The existing connect flow, with the same name, brings it back.
    response = client.post(
        f"/w/{workspace.slug}/settings/repositories/",
        {"kind": "github", "name": repo.full_name, "base_branch": "main"},
        follow=True,
    )
    assert "connected again: 1 review restored" in response.content.decode()
    assert Repository.objects.filter(workspace=workspace).count() == 1
    repo.refresh_from_db()
    assert repo.archived_at is None
    assert _state(repo) == before
    restored = AuditEvent.objects.get(workspace=workspace, action="repositories.reconnected")
    assert restored.payload["restored"]["findings"] == 4
    html = client.get(f"/w/{workspace.slug}/reviews/{space.pk}/").content.decode()
    assert "This repository is archived" not in html
    assert f"/reviews/{space.pk}/nodes/" in html  # actions are back


def test_a_bare_post_does_not_disconnect(triaged, workspace, alice, client_for):
    repo, _, _ = triaged
    client = client_for(alice)
    for url, body in (
        (f"/w/{workspace.slug}/settings/repositories/{repo.pk}/disconnect/", {}),
        (f"/w/{workspace.slug}/settings/repositories/{repo.pk}/", {"action": "remove"}),
    ):
        response = client.post(url, body)
        assert response.status_code == 200
        assert "Nothing has been done yet" in response.content.decode()
        assert 'name="confirm" value="yes"' in response.content.decode()
    repo.refresh_from_db()
    assert repo.archived_at is None
    assert not AuditEvent.objects.filter(action="repositories.archived").exists()


def test_an_archived_review_is_readable_and_read_only(
    triaged, workspace, alice, client_for, member_factory
):
    repo, space, nodes = triaged
    client = client_for(alice)
    _disconnect(client, workspace, repo)
    url = f"/w/{workspace.slug}/reviews/{space.pk}/"
    html = client.get(url).content.decode()
    assert "This repository is archived" in html
    assert "Finding 3" in html  # still readable
    assert f"/reviews/{space.pk}/nodes/" not in html  # no finding buttons
    assert "Request publish" not in html and "Cancel this round" not in html
    assert "Repository archived" in client.get(f"/w/{workspace.slug}/reviews/").content.decode()

    open_node = nodes[3]
    for post_url, body in (
        (f"{url}nodes/{open_node.pk}/", {"action": "resolve"}),
        (f"{url}request/", {"original_request": "do X"}),
        (f"{url}cancel/", {}),
        (f"{url}publish/", {}),
    ):
        response = client.post(post_url, body)
        assert response.status_code == 409, post_url
        assert "archived" in response.content.decode()
    htmx = client.post(f"{url}nodes/{open_node.pk}/", {"action": "resolve"}, HTTP_HX_REQUEST="true")
    assert htmx.status_code == 409 and "is archived" in htmx.content.decode()
    api = client.post(
        f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/nodes/{open_node.pk}/resolve",
        {"reason": "x"},
        content_type="application/json",
    )
    assert api.status_code == 409 and "archived" in api.json()["detail"]
    open_node.refresh_from_db()
    assert open_node.status == "open"
    # The JSON and the report still read.
    assert client.get(f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}").status_code == 200
    assert client.get(f"{url}report.md").status_code == 200


def test_a_token_caller_is_refused_on_an_archived_review(triaged, workspace, alice, client):
    repo, space, nodes = triaged
    services.repository_archive(repository=repo, actor=alice)
    _, secret = services.api_token_create(user=alice, name="ci")
    response = client.post(
        f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/nodes/{nodes[3].pk}/dismiss",
        {"reason": "x"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )
    assert response.status_code == 409
    assert "archived" in response.json()["detail"]
    nodes[3].refresh_from_db()
    assert nodes[3].status == "open"


def test_an_archived_repository_takes_no_new_review(triaged, workspace, alice, client_for):
    repo, _, _ = triaged
    client = client_for(alice)
    _disconnect(client, workspace, repo)
    api = f"/api/v1/workspaces/{workspace.slug}"
    assert client.get(f"{api}/repositories").json() == []
    archived = client.get(f"{api}/repositories?archived=true").json()
    assert [r["name"] for r in archived] == [repo.full_name] and archived[0]["archived_at"]
    response = client.post(
        f"{api}/reviews", {"repository": repo.pk, "number": 7}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "disconnected" in response.json()["detail"]
    page = client.get(f"/w/{workspace.slug}/reviews/").content.decode()
    assert f'<option value="{repo.pk}"' not in page.split('name="repository"', 2)[-1]
    form = client.post(f"/w/{workspace.slug}/reviews/", {"repository": repo.pk, "number": 7})
    assert form.status_code == 400
    assert ReviewRound.objects.count() == 1


def test_disconnecting_cancels_a_running_round(review_factory, workspace, alice):
    review_round = review_factory(workspace)
    repo = review_round.space.pull_request.repository
    kept = services.repository_archive(repository=repo, actor=alice)
    review_round.refresh_from_db()
    assert review_round.state == "cancelled"
    assert kept["rounds"] == 1
    event = AuditEvent.objects.get(action="repositories.archived")
    assert event.payload["rounds_cancelled"] == 1


def test_the_api_delete_archives(triaged, workspace, alice, client_for):
    repo, _, _ = triaged
    before = _state(repo)
    response = client_for(alice).delete(
        f"/api/v1/workspaces/{workspace.slug}/repositories/{repo.pk}"
    )
    assert response.status_code == 204
    repo.refresh_from_db()
    assert repo.archived_at is not None and _state(repo) == before


# -- delete for good ---------------------------------------------------------------------------


def _delete_url(workspace, repo):
    return f"/w/{workspace.slug}/settings/repositories/{repo.pk}/delete/"


def test_only_an_owner_may_delete_reviews_for_good(
    triaged, workspace, alice, client_for, member_factory, charlie
):
    repo, _, _ = triaged
    services.repository_archive(repository=repo, actor=alice)
    admin = member_factory(workspace, "admin", "adam@example.com")
    client = client_for(admin)
    assert client.get(_delete_url(workspace, repo)).status_code == 403
    assert (
        client.post(_delete_url(workspace, repo), {"confirm_name": repo.full_name}).status_code
        == 403
    )
    api = client.post(
        f"/api/v1/workspaces/{workspace.slug}/repositories/{repo.pk}/purge",
        {"confirm_name": repo.full_name},
        content_type="application/json",
    )
    assert api.status_code == 403
    outsider = client_for(charlie)
    assert outsider.post(
        _delete_url(workspace, repo), {"confirm_name": repo.full_name}
    ).status_code == (404)
    assert Repository.objects.filter(pk=repo.pk).exists()
    assert not Tombstone.objects.exists()
    refused = AuditEvent.objects.filter(action="permission.denied").first()
    assert refused.payload["needs"] == "owner"


def test_the_typed_name_must_match_and_the_repository_be_disconnected(
    triaged, workspace, alice, client_for
):
    repo, _, _ = triaged
    client = client_for(alice)
    connected = client.post(_delete_url(workspace, repo), {"confirm_name": repo.full_name})
    assert connected.status_code == 400
    assert "Disconnect" in connected.content.decode()
    services.repository_archive(repository=repo, actor=alice)
    page = client.get(_delete_url(workspace, repo)).content.decode()
    for line in ("1 review space", "1 review round", "4 findings", "2 triage decisions"):
        assert line in page
    wrong = client.post(_delete_url(workspace, repo), {"confirm_name": "acme/other"})
    assert wrong.status_code == 400
    assert "You typed &#x27;acme/other&#x27;, not the repository name" in wrong.content.decode()
    empty = client.post(_delete_url(workspace, repo), {})
    assert empty.status_code == 400
    assert Repository.objects.filter(pk=repo.pk).exists()
    assert ReviewNode.objects.count() == 4


def test_an_owner_deletes_for_good_with_tombstones_and_counts(
    triaged, workspace, alice, client_for
):
    repo, space, _ = triaged
    client = client_for(alice)
    _disconnect(client, workspace, repo)
    response = client.post(
        _delete_url(workspace, repo), {"confirm_name": f" {repo.full_name} "}, follow=True
    )
    assert "were deleted for good (4 findings, 2 triage decisions)" in response.content.decode()
    assert not Repository.objects.filter(pk=repo.pk).exists()
    assert not ReviewSpace.objects.exists() and not ReviewNode.objects.exists()
    assert not NodeConfirmation.objects.exists()

    event = AuditEvent.objects.get(workspace=workspace, action="repositories.deleted")
    assert event.actor_label == "alice@example.com"
    assert event.payload["deleted"] == {
        "review_spaces": 1,
        "rounds": 1,
        "findings": 4,
        "triage_decisions": 2,
        "confirmations": 1,
    }
    assert event.payload["review_spaces"] == [
        {"id": space.pk, "label": f"acme/repo{workspace.pk}#7"}
    ]
    stones = {(s.kind, s.object_id): s for s in Tombstone.objects.all()}
    assert set(stones) == {("repository", str(repo.pk)), ("reviewspace", str(space.pk))}
    assert stones[("reviewspace", str(space.pk))].counts == {"rounds": 1, "findings": 4}
    assert stones[("repository", str(repo.pk))].deleted_by == alice


def test_the_api_deletes_for_good_with_the_typed_name(triaged, workspace, alice, client_for):
    repo, _, _ = triaged
    services.repository_archive(repository=repo, actor=alice)
    url = f"/api/v1/workspaces/{workspace.slug}/repositories/{repo.pk}/purge"
    client = client_for(alice)
    wrong = client.post(url, {"confirm_name": "nope"}, content_type="application/json")
    assert wrong.status_code == 400 and "not the repository name" in wrong.json()["detail"]
    ok = client.post(url, {"confirm_name": repo.full_name}, content_type="application/json")
    assert ok.status_code == 200
    assert ok.json()["deleted"]["findings"] == 4
    assert not Repository.objects.filter(pk=repo.pk).exists()


# -- audit links to deleted objects -------------------------------------------------------------


def test_an_audit_link_to_a_deleted_review_shows_what_it_was(
    triaged, workspace, alice, client_for, charlie
):
    repo, space, _ = triaged
    # What starting the review wrote (reviews/services/requests.py): a row about the space.
    audit_record(
        action="review.requested",
        actor=Actor.of(alice),
        workspace=workspace,
        target=Target("reviewspace", str(space.pk), str(space.pull_request)),
    )
    client = client_for(alice)
    before = client.get(f"/w/{workspace.slug}/audit/").content.decode()
    assert f'href="/w/{workspace.slug}/reviews/{space.pk}/"' in before
    _disconnect(client, workspace, repo)
    client.post(_delete_url(workspace, repo), {"confirm_name": repo.full_name})

    audit = client.get(f"/w/{workspace.slug}/audit/").content.decode()
    link = f"/w/{workspace.slug}/deleted/reviewspace/{space.pk}/"
    assert f'href="{link}"' in audit  # the rows of the deleted review point at its tombstone
    assert f'href="/w/{workspace.slug}/reviews/{space.pk}/"' not in audit
    for url in (link, f"/w/{workspace.slug}/reviews/{space.pk}/"):
        page = client.get(url)
        assert page.status_code == 410, url
        html = page.content.decode()
        assert "This review was deleted" in html
        assert f"acme/repo{workspace.pk}#7" in html
        assert "by alice@example.com" in html
        assert "4 findings" in html
    repo_page = client.get(f"/w/{workspace.slug}/deleted/repository/{repo.pk}/")
    assert repo_page.status_code == 410 and "This repository was deleted" in (
        repo_page.content.decode()
    )
    # Membership first: an outsider learns nothing; an unknown id is still a 404.
    assert client_for(charlie).get(link).status_code == 404
    assert client_for(charlie).get(f"/w/{workspace.slug}/reviews/{space.pk}/").status_code == 404
    assert client_for(alice).get(f"/w/{workspace.slug}/reviews/{space.pk + 999}/").status_code == (
        404
    )


# -- confirmations -----------------------------------------------------------------------------


def test_removing_a_member_needs_the_confirmation(workspace, alice, client_for, member_factory):
    bob = member_factory(workspace, "viewer", "bob@example.com")
    bob_m = Membership.objects.get(user=bob)
    client = client_for(alice)
    url = f"/w/{workspace.slug}/settings/members/{bob_m.pk}/"
    page = client.get(f"/w/{workspace.slug}/settings/members/").content.decode()
    assert "Remove bob@example.com" in page  # behind a <details> with the confirmation
    bare = client.post(url, {"action": "remove"})
    assert bare.status_code == 200 and "Remove bob@example.com from Acme?" in bare.content.decode()
    assert Membership.objects.filter(pk=bob_m.pk).exists()
    client.post(url, {"action": "remove", "confirm": "yes"})
    assert not Membership.objects.filter(pk=bob_m.pk).exists()


def test_revoking_a_token_needs_the_confirmation(alice, client_for, db):
    client = client_for(alice)
    token, _ = services.api_token_create(user=alice, name="ci")
    bare = client.post("/account/tokens/", {"action": "revoke", "token_id": token.pk})
    assert bare.status_code == 200 and "Revoke the token ci?" in bare.content.decode()
    token.refresh_from_db()
    assert token.revoked_at is None
    client.post("/account/tokens/", {"action": "revoke", "token_id": token.pk, "confirm": "yes"})
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None


def test_denying_an_approval_needs_the_confirmation(workspace, alice, client_for, member_factory):
    outcome = policy_update(
        workspace=workspace,
        action="prPublish",
        policy="allow",
        approvals_required=1,
        expires_after_minutes=60,
        actor=alice,
    )
    pending = outcome.request
    admin = member_factory(workspace, "admin", "adam@example.com")
    client = client_for(admin)
    inbox = client.get(f"/w/{workspace.slug}/approvals/").content.decode()
    assert f"Deny request #{pending.pk}" in inbox
    url = f"/w/{workspace.slug}/approvals/{pending.pk}/decide/"
    bare = client.post(url, {"decision": "deny", "reason": "too loose"})
    assert bare.status_code == 200
    html = bare.content.decode()
    assert f"Deny request #{pending.pk}" in html and 'value="too loose"' in html
    assert ApprovalRequest.objects.get(pk=pending.pk).status == "pending"
    client.post(url, {"decision": "deny", "reason": "too loose", "confirm": "yes"})
    assert ApprovalRequest.objects.get(pk=pending.pk).status == "denied"


# -- publishing an archived review -------------------------------------------------------------


def test_an_archived_review_is_neither_published_nor_approved(publishable, alice, client_for):
    from django.test import Client

    from guardrails.presence import presence_touch
    from reviews.services.publishing import publish_request

    space, _, bob, vera = publishable
    workspace = space.workspace
    presence_touch(channel_name="vera", workspace_id=workspace.pk, user_id=vera.pk)
    pending = publish_request(
        space=space, selection="all_open", approve_on_ship=True, actor=bob
    ).request
    services.repository_archive(repository=space.pull_request.repository, actor=alice)

    # A request asked before the disconnect cannot be approved afterwards, page or API.
    page = client_for(vera).post(
        f"/w/{workspace.slug}/approvals/{pending.pk}/decide/", {"decision": "approve"}, follow=True
    )
    assert "is archived" in page.content.decode()
    api = client_for(vera).post(
        f"/api/v1/workspaces/{workspace.slug}/approvals/{pending.pk}/approve",
        {},
        content_type="application/json",
    )
    assert api.status_code == 409 and "archived" in api.json()["detail"]
    assert ApprovalRequest.objects.get(pk=pending.pk).status == "pending"

    # A new request is refused, for a token caller too; the preview offers no button.
    _, secret = services.api_token_create(user=bob, name="ci")
    refused = Client().post(
        f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/publish-requests",
        {"selection": "all_open"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )
    assert refused.status_code == 409 and "archived" in refused.json()["detail"]
    assert ApprovalRequest.objects.filter(target_id=str(space.pk)).count() == 1


def test_deleting_for_good_cancels_open_requests_on_those_reviews(
    triaged, workspace, alice, member_factory
):
    """A publish request still waiting on a deleted review leaves the inbox: cancelled, with
    the reason, counted in the deletion's audit event; approving it is no longer possible."""
    from datetime import timedelta

    from django.utils import timezone

    from guardrails.services.approvals import approval_decide

    repo, space, _ = triaged
    vera = member_factory(workspace, "approver", "vera@example.com")
    waiting = ApprovalRequest.objects.create(
        workspace=workspace,
        action_class="prPublish",
        requester=alice,
        target_type="reviewspace",
        target_id=str(space.pk),
        target_label=str(space.pull_request),
        payload={"space": space.pk},
        payload_hash="0" * 64,
        expires_at=timezone.now() + timedelta(hours=1),
    )
    services.repository_archive(repository=repo, actor=alice)
    owner = Membership.objects.get(workspace=workspace, user=alice)
    services.repository_purge(repository=repo, actor=owner, typed_name=repo.full_name)
    waiting.refresh_from_db()
    assert waiting.status == "cancelled" and "deleted for good" in waiting.error
    event = AuditEvent.objects.get(workspace=workspace, action="repositories.deleted")
    assert event.payload["approval_requests_cancelled"] == 1
    with pytest.raises(Exception, match=r"(?i)cancelled|not pending|no longer"):
        approval_decide(request=waiting, approver=vera, decision="approve")
