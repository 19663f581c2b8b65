"""Open sockets follow permissions: removal, a role change or logout closes them within a second."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session
from django.test import Client

from config.asgi import application
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_dismiss
from tests.fixtures import node_payload
from workspaces import services
from workspaces.models import Membership

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://127.0.0.1:8000")


def _login(user) -> tuple[Client, tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    return client, (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


@pytest.fixture
def live(review_factory, stream_factory, workspace, member_factory):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "implementation")
    nodes = [
        node_record(stream=stream, payload=node_payload(title=f"Finding {i}")).node
        for i in range(3)
    ]
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    return review_round.space, nodes, bob


async def _closed_within(comm: WebsocketCommunicator, seconds: float) -> tuple[float, list[str]]:
    """Wait for the close; return how long it took and any page text received before it."""
    started, texts = time.monotonic(), []
    while True:
        message = await comm.receive_output(timeout=seconds)
        if message["type"] == "websocket.close":
            assert message.get("code") == 4403
            return time.monotonic() - started, texts
        texts.append(message.get("text", ""))


def _scenario(space, bob, revoke, then_change=None):
    client, cookie = _login(bob)

    async def run():
        comm = WebsocketCommunicator(
            application, f"/ws/reviews/{space.pk}/", headers=[ORIGIN, cookie]
        )
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_from(timeout=5)  # the initial page
        await database_sync_to_async(revoke)(client)
        if then_change is not None:
            await database_sync_to_async(then_change)()
        took, texts = await _closed_within(comm, 3)
        await comm.wait()
        return took, texts

    return asyncio.run(run())


def test_a_removed_member_is_disconnected_and_receives_nothing_more(live, alice, workspace):
    space, nodes, bob = live
    owner = Membership.objects.get(workspace=workspace, user=alice)

    def remove(_client):
        services.member_remove(
            actor=owner, membership=Membership.objects.get(workspace=workspace, user=bob)
        )

    def change():
        node_dismiss(node=nodes[0], user=alice, reason="seen")

    took, texts = _scenario(space, bob, remove, change)
    assert took < 1.0
    assert not any("node-dismissed" in t for t in texts)


def test_a_role_change_closes_the_socket_so_it_reconnects_with_the_new_role(live, alice, workspace):
    space, _, bob = live
    owner = Membership.objects.get(workspace=workspace, user=alice)

    def demote(_client):
        services.member_change_role(
            actor=owner,
            membership=Membership.objects.get(workspace=workspace, user=bob),
            role="viewer",
        )

    took, _ = _scenario(space, bob, demote)
    assert took < 1.0


def test_logging_out_closes_the_users_sockets(live):
    space, _, bob = live
    took, _ = _scenario(space, bob, lambda client: client.post("/accounts/logout/"))
    assert took < 1.0
    assert not Session.objects.exists()


def test_an_ended_session_gets_no_further_event_even_without_a_signal(live, alice):
    """The per-event check: a session deleted behind the app's back (expiry, an operator)."""
    space, nodes, bob = live
    _, cookie = _login(bob)

    async def run():
        comm = WebsocketCommunicator(
            application, f"/ws/reviews/{space.pk}/", headers=[ORIGIN, cookie]
        )
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_from(timeout=5)
        await database_sync_to_async(Session.objects.all().delete)()
        await asyncio.sleep(1.1)  # past the reuse window of the last check
        await database_sync_to_async(node_dismiss)(node=nodes[1], user=alice, reason="x")
        took, texts = await _closed_within(comm, 3)
        return texts

    texts = asyncio.run(run())
    assert texts == []


def test_a_removed_approver_stops_counting_as_present(live, alice, workspace, member_factory):
    from guardrails.presence import present_approvers

    vera = member_factory(workspace, "approver", "vera@example.com")
    _, cookie = _login(vera)
    owner = Membership.objects.get(workspace=workspace, user=alice)

    async def run():
        comm = WebsocketCommunicator(
            application, f"/ws/approvals/{workspace.slug}/", headers=[ORIGIN, cookie]
        )
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_from(timeout=5)
        assert await database_sync_to_async(present_approvers)(workspace_id=workspace.pk)
        await database_sync_to_async(services.member_remove)(
            actor=owner, membership=await database_sync_to_async(Membership.objects.get)(user=vera)
        )
        took, _ = await _closed_within(comm, 3)
        await comm.wait()
        return took

    took = asyncio.run(run())
    assert took < 1.0
    assert present_approvers(workspace_id=workspace.pk) == []
