"""/ws/reviews/list/<slug>/: the reviews list follows a verdict live, for members only."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from config.asgi import application
from reviews.models import ReviewRound
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_resolve
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://127.0.0.1:8000")


def _cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


@pytest.fixture
def blocked(review_factory, stream_factory, workspace):
    workspace.gated_axes = []
    workspace.save(update_fields=["gated_axes"])
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "security")
    node = node_record(stream=stream, payload=node_payload(priority="P0", confidence=0.9)).node
    round_finalise(review_round=review_round)
    ReviewRound.objects.filter(pk=review_round.pk).update(state="finished")
    return review_round.space, node


def test_a_members_list_row_follows_the_verdict(blocked, workspace, alice):
    space, node = blocked
    cookie = _cookie(alice)

    async def scenario():
        comm = WebsocketCommunicator(
            application, f"/ws/reviews/list/{workspace.slug}/", headers=[ORIGIN, cookie]
        )
        connected, _ = await comm.connect()
        assert connected
        await database_sync_to_async(node_resolve)(node=node, user=alice)
        update = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return update

    update = asyncio.run(scenario())
    assert f'<tr id="space-row-{space.pk}" hx-swap-oob="true">' in update
    assert "✓ Ship" in update and "P0 0" in update


def test_an_outsider_cannot_listen(blocked, workspace, charlie):
    cookie = _cookie(charlie)

    async def scenario():
        comm = WebsocketCommunicator(
            application, f"/ws/reviews/list/{workspace.slug}/", headers=[ORIGIN, cookie]
        )
        connected, code = await comm.connect()
        await comm.disconnect()
        return connected, code

    assert asyncio.run(scenario()) == (False, 4403)


def test_the_publish_preview_socket_ignores_other_events_and_refuses_outsiders(
    blocked, alice, charlie
):
    """Only a verdict change re-plans the preview; no plan possible (here: not a GitHub PR
    awaiting approval) means nothing is sent and the socket stays open."""
    space, node = blocked
    member, outsider = _cookie(alice), _cookie(charlie)
    path = f"/ws/reviews/{space.pk}/publish/"

    async def scenario():
        refused = WebsocketCommunicator(application, path, headers=[ORIGIN, outsider])
        assert (await refused.connect())[0] is False
        comm = WebsocketCommunicator(application, path, headers=[ORIGIN, member])
        assert (await comm.connect())[0]
        await database_sync_to_async(node_resolve)(node=node, user=alice)  # status + verdict
        assert await comm.receive_nothing(timeout=1)
        await comm.disconnect()

    asyncio.run(scenario())
