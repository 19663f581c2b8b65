"""The approvals inbox reads as words: what the request is about (linked), exactly what would
be posted (rendered), the requester's note, times, presence without the viewer, decision
messages in English, and decisions with their reasons kept in view afterwards."""

from __future__ import annotations

import asyncio
import re

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client

from config.asgi import application
from guardrails.models import ActionPolicy, ApprovalRequest
from guardrails.presence import presence_touch
from reviews.services.publishing import publish_request

NOTE = "Checked with the team: see https://example.com/thread please."


def _ask(space, bob, vera, note=NOTE):
    presence_touch(channel_name="vera-socket", workspace_id=space.workspace_id, user_id=vera.pk)
    result = publish_request(
        space=space, selection="all_open", approve_on_ship=True, actor=bob, note=note
    )
    assert result.outcome == "pending"
    return result.request


def _inbox(client, space) -> str:
    return client.get(f"/w/{space.workspace.slug}/approvals/").content.decode()


def test_a_pending_request_links_its_review_and_shows_what_would_be_posted(publishable, client_for):
    space, _, bob, vera = publishable
    request = _ask(space, bob, vera)
    html = _inbox(client_for(vera), space)
    card = html[html.index(f'id="approval-{request.pk}"') :]
    card = card[: card.index("</article>")]
    title = card[card.index("<h3") : card.index("</h3>")]
    assert f'<a href="/w/{space.workspace.slug}/reviews/{space.pk}/">acme/app#5' in title
    # The plan is rendered as GitHub will render it, not shown as markdown source.
    assert "<strong>Why " in card and "**Why " not in card
    assert 'class="markdown-body rendered-comment"' in card
    # What the requester wrote, with its link.
    assert "bob@example.com wrote:" in card
    assert '<a href="https://example.com/thread" rel="noopener nofollow">' in card
    # Times and the selection in words.
    assert ">just now</time>" in card and "0 minutes" not in card
    assert re.search(r"expires in (59|60) minutes", card)
    assert "posts every open finding" in card and "all_open" not in card


def test_presence_never_counts_the_viewer(publishable, client_for):
    space, _, bob, vera = publishable
    presence_touch(channel_name="vera-socket", workspace_id=space.workspace_id, user_id=vera.pk)
    assert "Approvers other than you connected: 0" in _inbox(client_for(vera), space)
    assert "Approvers other than you connected: 1" in _inbox(client_for(bob), space)


def test_a_denial_says_denied_and_its_reason_stays_on_the_inbox_and_the_review(
    publishable, client, member_factory
):
    space, _, bob, vera = publishable
    request = _ask(space, bob, vera)
    client.force_login(vera)
    page = client.post(
        f"/w/{space.workspace.slug}/approvals/{request.pk}/decide/",
        {"decision": "deny", "reason": "Finding 1 is a false positive", "confirm": "yes"},
        follow=True,
    ).content.decode()
    assert f"Request #{request.pk} denied: nothing it asked for happens." in page
    assert "denyd" not in page
    history = page[page.index(f'id="recent-{request.pk}"') :]
    history = history[: history.index("</tr>")]
    assert '<span class="badge">Denied</span>' in history
    assert "vera@example.com denied: “Finding 1 is a false positive”" in history
    # Anyone with access sees the decision and its reason on the review itself.
    reader = member_factory(space.workspace, "viewer", "rita@example.com")
    client.force_login(reader)
    review = client.get(f"/w/{space.workspace.slug}/reviews/{space.pk}/").content.decode()
    state = review[review.index('id="publish-state"') :]
    assert f"Last publish request #{request.pk}: denied." in state
    assert (
        f"vera@example.com denied request #{request.pk}: “Finding 1 is a false positive”" in state
    )
    assert "vera@example.com denied: “Finding 1 is a false positive”" in _inbox(client, space)


def test_an_approval_short_of_the_number_needed_says_how_many_are_missing(
    publishable, client, member_factory
):
    space, _, bob, vera = publishable
    ActionPolicy.objects.create(
        workspace=space.workspace, action_class="prPublish", approvals_required=2
    )
    request = _ask(space, bob, vera, note="")
    client.force_login(vera)
    page = client.post(
        f"/w/{space.workspace.slug}/approvals/{request.pk}/decide/",
        {"decision": "approve", "reason": "looks right"},
        follow=True,
    ).content.decode()
    assert (
        f"Request #{request.pk}: your approval is recorded; it needs 1 more approval before it "
        "runs." in page
    )
    assert ApprovalRequest.objects.get(pk=request.pk).status == "pending"
    card = page[page.index(f'id="approval-{request.pk}"') :]
    assert "1 of 2 approvals" in card[: card.index("</article>")]
    assert "wrote:" not in card[: card.index("</article>")]  # no note, no empty quote


@pytest.mark.django_db(transaction=True)
def test_the_live_inbox_tells_an_approver_their_own_presence_counts(publishable):
    space, _, _, vera = publishable
    client = Client()
    client.force_login(vera)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    slug = space.workspace.slug

    async def scenario():
        comm = WebsocketCommunicator(
            application,
            f"/ws/approvals/{slug}/",
            headers=[(b"origin", b"http://127.0.0.1"), cookie],
        )
        connected, _ = await comm.connect()
        assert connected
        first = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return first

    first = asyncio.run(scenario())
    assert "Approvers other than you connected: 0" in first
    assert 'id="own-presence"' in first and "You are connected too" in first
