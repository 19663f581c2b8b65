"""The live window (reviews/live/window.py): the changes of a moment reach an open review page
as one update and one version, from whichever processes made them, and none is left behind
by a process that died or a Redis that does not answer."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
import time

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client

from config.asgi import application
from reviews.live import version as live_version
from reviews.live import window as live_window
from reviews.live.events import space_send
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_dismiss
from tests.fixtures import node_payload

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]
ORIGIN = (b"origin", b"http://127.0.0.1:8000")
VERSION = re.compile(r'id="live-version" hidden data-version="[^"-]*-(\d+)"')
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def window(settings):
    settings.QUORUM_LIVE_WINDOW_MS = 300


@pytest.fixture
def live(review_factory, stream_factory, workspace, alice):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "implementation")
    nodes = [
        node_record(stream=stream, payload=node_payload(title=f"Finding {i}")).node
        for i in range(4)
    ]
    client = Client()
    client.force_login(alice)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    time.sleep(0.5)  # the window of the findings' own events has closed
    return review_round.space, nodes, cookie


async def _synced(space, cookie) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(application, f"/ws/reviews/{space.pk}/", headers=[ORIGIN, cookie])
    assert (await comm.connect())[0]
    await comm.receive_from(timeout=5)  # the initial sync
    return comm


async def _all(comm: WebsocketCommunicator, quiet: float = 1.0) -> list[str]:
    """Every message until the socket has been quiet for `quiet` seconds."""
    received = [await comm.receive_from(timeout=10)]
    while not await comm.receive_nothing(timeout=quiet):
        received.append(await comm.receive_from(timeout=10))
    return received


def _version(space_id: int) -> int:
    state = live_version.current(space_id)
    return state.n if state else 0


def test_changes_from_several_threads_within_the_window_arrive_as_one_update(window, live, alice):
    space, nodes, cookie = live
    before = _version(space.pk)

    def dismiss(node) -> None:  # each in a thread (and a transaction) of its own
        try:
            node_dismiss(node=node, user=alice, reason="not a problem")
        finally:
            connections.close_all()  # this thread's connection back to the pool

    async def scenario():
        comm = await _synced(space, cookie)
        threads = [threading.Thread(target=dismiss, args=(n,)) for n in nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            await asyncio.to_thread(thread.join)
        received = await _all(comm)
        await comm.disconnect()
        return received

    received = asyncio.run(scenario())
    assert len(received) == 1, [VERSION.search(m).group(1) for m in received]
    (update,) = received
    for node in nodes:
        card = re.search(rf'<article[^>]*id="node-{node.pk}"[^>]*>', update)
        assert card and "node-dismissed" in card.group(0)
    assert int(VERSION.search(update).group(1)) == _version(space.pk) == before + 1
    # A page loaded now shows what the socket brought.
    page = Client()
    page.force_login(alice)
    html = page.get(f"/w/{space.workspace.slug}/reviews/{space.pk}/").content.decode()
    assert all(f'id="node-{n.pk}"' in html for n in nodes)
    assert html.count("node-dismissed") >= len(nodes)


def test_a_change_after_the_window_is_a_new_update(window, live, alice):
    space, nodes, cookie = live

    async def scenario():
        comm = await _synced(space, cookie)
        await database_sync_to_async(node_dismiss)(node=nodes[0], user=alice, reason="no")
        first = await _all(comm, quiet=0.6)
        await database_sync_to_async(node_dismiss)(node=nodes[1], user=alice, reason="no")
        second = await _all(comm, quiet=0.6)
        await comm.disconnect()
        return first, second

    first, second = asyncio.run(scenario())
    assert len(first) == len(second) == 1
    assert f'id="node-{nodes[0].pk}"' in first[0] and f'id="node-{nodes[1].pk}"' in second[0]
    assert int(VERSION.search(second[0]).group(1)) == int(VERSION.search(first[0]).group(1)) + 1


def test_what_a_dead_sender_left_goes_out_with_the_next_change(window, live, alice):
    """A process takes the space's window with a change, then dies before the window ends:
    its change reaches the page with the next one, once its claim has lapsed."""
    space, nodes, cookie = live
    dying = (
        "import os, django; django.setup()\n"
        "from reviews.live import window\n"
        f"window.add({space.pk}, [{{'type': 'review.node_status', 'node_id': {nodes[0].pk}}}],"
        " lambda *a: None)\n"
        "os._exit(0)  # no atexit: the planned send never happens\n"
    )
    env = {**os.environ, "QUORUM_LIVE_WINDOW_MS": "300", "REDIS_URL": settings.REDIS_URL}
    subprocess.run([sys.executable, "-c", dying], cwd=ROOT, env=env, check=True, timeout=60)

    async def scenario():
        comm = await _synced(space, cookie)
        assert await comm.receive_nothing(timeout=1.0)  # nobody is left to send it
        await asyncio.sleep(live_window.CLAIM_SECONDS)
        await database_sync_to_async(node_dismiss)(node=nodes[1], user=alice, reason="no")
        received = await _all(comm, quiet=0.6)
        await comm.disconnect()
        return received

    received = asyncio.run(scenario())
    assert len(received) == 1
    # The dead process's event names the first finding's card; the new one the second's: one
    # message carries both (as the findings section, since two cards moved).
    assert f'id="node-{nodes[0].pk}"' in received[0] and f'id="node-{nodes[1].pk}"' in received[0]


def test_without_an_answering_redis_each_change_goes_out_at_once(window, live, alice, settings):
    """The window and the live version live in Redis; the channel layer is configured apart.
    With them unreachable, a change still reaches the page (without a version)."""
    space, nodes, cookie = live
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # the discard port: refused at once

    async def scenario():
        comm = await _synced(space, cookie)
        await database_sync_to_async(node_dismiss)(node=nodes[0], user=alice, reason="no")
        received = await _all(comm, quiet=0.6)
        await comm.disconnect()
        return received

    received = asyncio.run(scenario())
    assert len(received) == 1 and f'id="node-{nodes[0].pk}"' in received[0]


def test_a_verdict_ends_the_window_at_once_with_what_it_held(live, alice, settings):
    space, nodes, cookie = live
    settings.QUORUM_LIVE_WINDOW_MS = 3000

    async def scenario():
        comm = await _synced(space, cookie)
        await database_sync_to_async(node_dismiss)(node=nodes[0], user=alice, reason="no")
        await asyncio.sleep(0.2)
        sent = time.monotonic()
        await database_sync_to_async(space_send)(space.pk, "review.verdict")
        # The header with the verdict may go ahead of the update that brings the version.
        received = [await comm.receive_from(timeout=10)]
        while 'id="live-version"' not in received[-1]:
            received.append(await comm.receive_from(timeout=10))
        arrived = time.monotonic() - sent
        # The window it ended sends nothing more when its timer fires.
        quiet = await comm.receive_nothing(timeout=3.5)
        await comm.disconnect()
        return received, arrived, quiet

    received, arrived, quiet = asyncio.run(scenario())
    assert arrived < 2.0, arrived  # not the 3 s the window would hold it
    assert len(received) <= 2
    assert f'id="node-{nodes[0].pk}"' in received[-1]
    assert 'id="review-header"' in received[0]
    assert quiet
