"""/ws/reviews/<id>/: who may listen, and live fragments after a change."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from config.asgi import application
from reviews.services.nodes import node_dismiss, node_record
from tests.fixtures import node_payload

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://127.0.0.1:8000")


def _cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


def _communicator(space_id: int, *headers) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, f"/ws/reviews/{space_id}/", headers=list(headers))


@pytest.fixture
def live(review_factory, stream_factory, workspace, alice):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "implementation")
    node = node_record(stream=stream, payload=node_payload(title="Live finding")).node
    return review_round.space, node


def test_a_member_receives_the_page_then_a_change_made_elsewhere(live, alice):
    space, node = live
    cookie = _cookie(alice)

    async def scenario():
        comm = _communicator(space.pk, ORIGIN, cookie)
        connected, _ = await comm.connect()
        assert connected
        first = await comm.receive_from(timeout=5)
        assert 'id="review-header"' in first and "Live finding" in first
        await database_sync_to_async(node_dismiss)(node=node, user=alice, reason="dup")
        update = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return update

    update = asyncio.run(scenario())
    assert f'id="node-{node.pk}"' in update and 'hx-swap-oob="true"' in update
    assert "node-dismissed" in update


@pytest.mark.parametrize("who", ["anonymous", "outsider"])
def test_anonymous_and_non_members_are_refused(live, who, charlie):
    space, _ = live
    headers = [ORIGIN] + ([_cookie(charlie)] if who == "outsider" else [])

    async def scenario():
        comm = _communicator(space.pk, *headers)
        connected, code = await comm.connect()
        await comm.disconnect()
        return connected, code

    connected, code = asyncio.run(scenario())
    assert not connected
    assert code == 4403


def test_a_cross_origin_socket_is_refused(live, alice):
    space, _ = live
    cookie = _cookie(alice)

    async def scenario():
        comm = _communicator(space.pk, (b"origin", b"https://evil.example"), cookie)
        connected, _ = await comm.connect()
        await comm.disconnect()
        return connected

    assert asyncio.run(scenario()) is False


def test_a_member_of_another_workspace_receives_nothing(
    live, alice, review_factory, workspace_factory, user_factory, stream_factory
):
    _space, node = live
    other_user = user_factory("olivia@example.com")
    other_round = review_factory(workspace_factory(owner=other_user))
    cookie = _cookie(other_user)

    async def scenario():
        mine = _communicator(other_round.space_id, ORIGIN, cookie)
        connected, _ = await mine.connect()
        assert connected
        await mine.receive_from(timeout=5)  # the initial sync of their own review
        await database_sync_to_async(node_dismiss)(node=node, user=alice, reason="x")
        nothing = await mine.receive_nothing(timeout=1)
        await mine.disconnect()
        return nothing

    assert asyncio.run(scenario()) is True
