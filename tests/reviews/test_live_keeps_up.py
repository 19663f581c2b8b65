"""Live review pages that keep up (issue 42): a socket that is behind gets the newest version
rather than a backlog, a section is rendered once per version for the sockets that show it
alike, and the page's sections are cached per version and viewer without leaking one member's
view to another or outliving a change."""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.test.signals import template_rendered

from config.asgi import application
from reviews.live import version as live_version
from reviews.live.consumers import Pending, newer
from reviews.live.events import space_send
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_dismiss
from tests.fixtures import node_payload
from workspaces import live_access

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://127.0.0.1:8000")
VERSION = re.compile(r'id="live-version" hidden data-version="([^"]*)"')


def _cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def live(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "implementation")
    node = node_record(stream=stream, payload=node_payload(title="Live finding")).node
    return review_round.space, node


@pytest.fixture
def section_renders() -> Iterator[Counter]:
    """How many times each section template was rendered (Django's test signal, sent by the
    real template engine from whichever thread renders)."""
    counts: Counter = Counter()
    lock = threading.Lock()

    def count(sender, template, context, **kwargs) -> None:
        if template.name and template.name.startswith("reviews/sections/"):
            with lock:
                counts[template.name.removeprefix("reviews/sections/")] += 1

    template_rendered.connect(count, dispatch_uid="test_live_keeps_up")
    yield counts
    template_rendered.disconnect(dispatch_uid="test_live_keeps_up")


def _hold_render_pool() -> threading.Event:
    """Occupy every thread of the live render pool until the event is set: the renders
    queued meanwhile wait, as they do on a busy server."""
    release = threading.Event()
    for _ in range(live_access.RENDER_THREADS):
        live_access._render_pool.submit(release.wait, 10)
    return release


async def _synced(space, cookie) -> WebsocketCommunicator:
    """A review page's socket, connected and past its initial sync."""
    comm = WebsocketCommunicator(application, f"/ws/reviews/{space.pk}/", headers=[ORIGIN, cookie])
    assert (await comm.connect())[0]
    await comm.receive_from(timeout=5)  # the initial sync
    return comm


async def _messages(comm: WebsocketCommunicator, until: str) -> list[str]:
    """What the socket sends up to the message that brings version `until`, and anything
    within half a second after it (a busy machine may take seconds to render)."""
    received: list[str] = []
    while not received or VERSION.search(received[-1]).group(1) != until:
        received.append(await comm.receive_from(timeout=20))
    while not await comm.receive_nothing(timeout=0.5):
        received.append(await comm.receive_from(timeout=5))
    return received


def test_a_socket_that_is_behind_gets_the_newest_version_not_a_backlog(live, alice):
    space, _node = live
    cookie = _cookie(alice)

    async def scenario():
        comm = await _synced(space, cookie)
        release = _hold_render_pool()
        sent = []
        for _ in range(12):  # twelve changes while the socket cannot render
            await database_sync_to_async(space_send)(space.pk, "review.stream")
            sent.append((await database_sync_to_async(live_version.current)(space.pk)).token)
        await asyncio.sleep(0.3)  # every event is in before the pool frees up
        release.set()
        received = await _messages(comm, sent[-1])
        await comm.disconnect()
        return sent, received

    sent, received = asyncio.run(scenario())
    versions = [VERSION.search(m).group(1) for m in received]
    # The render under way when the burst began (the first change), then one for all the rest.
    assert len(received) <= 2, versions
    assert versions[-1] == sent[-1]
    assert all('id="review-streams"' in m for m in received)


def test_a_verdict_reaches_a_busy_socket_at_once_and_the_rest_follows_with_its_version(live, alice):
    """While every render thread is busy, the verdict's header still goes out (from the urgent
    pool); coalescing loses no section afterwards: the update under way, then the stream and
    the verdict as one message with the newest version. The update of before, sent after the
    verdict, leaves the header out: the page never goes back to a header without it."""
    space, _node = live
    cookie = _cookie(alice)

    async def scenario():
        comm = await _synced(space, cookie)
        release = _hold_render_pool()
        await database_sync_to_async(space_send)(space.pk, "review.stream")
        await asyncio.sleep(0.2)  # the socket's sender now waits for a render thread
        await database_sync_to_async(space_send)(space.pk, "review.axis_changed")
        await database_sync_to_async(space_send)(space.pk, "review.verdict")
        newest = (await database_sync_to_async(live_version.current)(space.pk)).token
        ahead = await comm.receive_from(timeout=10)  # with the render pool still held
        release.set()
        received = await _messages(comm, newest)
        await comm.disconnect()
        return newest, ahead, received

    newest, ahead, received = asyncio.run(scenario())
    assert 'id="review-header"' in ahead and VERSION.search(ahead) is None
    assert 'id="review-streams"' not in ahead
    assert len(received) == 2
    before, last = received
    assert 'id="review-streams"' in before and 'id="review-header"' not in before
    assert 'id="review-axes"' in last and 'id="review-header"' in last
    assert VERSION.search(last).group(1) == newest


def test_pending_updates_fold_into_sections_and_the_newest_version():
    pending = Pending(sections={"notes"}, version="e-3")
    pending.add([{"type": "review.node_status", "node_id": 7}], "e-5")
    pending.add([{"type": "review.axis_changed"}], "e-4")  # arrived late: not newer
    sections, card = pending.plan()
    assert card == 7 and "findings" not in sections
    assert set(sections) == {"header", "disagreements", "axes", "notes"}
    assert pending.version == "e-5"
    pending.add([{"type": "review.node_added", "node_id": 8}], "e-6")
    sections, card = pending.plan()
    assert card is None and {"findings", "cohorts"} <= set(sections)
    assert newer("f-1", "e-9") and newer("e-10", "e-9") and not newer("e-9", "e-10")


def test_sockets_alike_share_one_render_and_another_role_gets_its_own(
    live, alice, member_factory, workspace, section_renders
):
    space, node = live
    bob = member_factory(workspace, "viewer", "bob@example.com")
    cookies = [_cookie(alice), _cookie(alice), _cookie(alice), _cookie(bob)]

    async def scenario():
        pages = [
            WebsocketCommunicator(application, f"/ws/reviews/{space.pk}/", headers=[ORIGIN, c])
            for c in cookies
        ]
        for comm in pages:
            assert (await comm.connect())[0]
            await comm.receive_from(timeout=5)
        section_renders.clear()
        await database_sync_to_async(space_send)(space.pk, "review.axis_changed")
        updates = [await comm.receive_from(timeout=5) for comm in pages]
        for comm in pages:
            await comm.disconnect()
        return updates

    updates = asyncio.run(scenario())
    assert all('id="review-axes"' in u for u in updates)
    # Alice's three tabs share one render; Bob (another role) has his own.
    assert section_renders == Counter({"axes.html": 2})


def _findings_section(html: str) -> str:
    return html.split('id="review-findings"', 1)[1]


def test_the_page_is_cached_per_version_and_viewer_and_a_change_invalidates_it(
    live, alice, member_factory, workspace, section_renders
):
    space, node = live
    bob = member_factory(workspace, "viewer", "bob@example.com")
    url = f"/w/{workspace.slug}/reviews/{space.pk}/"
    owner, viewer = _client(alice), _client(bob)
    dismiss = 'value="dismiss"'

    first = owner.get(url).content.decode()
    assert dismiss in _findings_section(first)
    rendered = sum(section_renders.values())
    assert rendered >= 10  # every section, once

    # Another role at the same version: rendered for that role, no owner's buttons.
    bobs = viewer.get(url).content.decode()
    assert dismiss not in bobs and "Live finding" in bobs
    assert sum(section_renders.values()) == 2 * rendered

    # The owner again, same version: from the cache, with this request's CSRF token.
    again = owner.get(url)
    assert sum(section_renders.values()) == 2 * rendered
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', again.content.decode())
    assert token and token.group(1) != "__quorum_csrf_slot__"
    assert dismiss in _findings_section(again.content.decode())

    # A change bumps the version: the next load renders anew and shows it.
    node_dismiss(node=node, user=alice, reason="dup")
    after = owner.get(url).content.decode()
    assert sum(section_renders.values()) == 3 * rendered
    assert "node-dismissed" in after
    assert "node-dismissed" in viewer.get(url).content.decode()


def test_a_render_of_the_last_second_stands_in_for_a_newer_version_and_its_socket_catches_up(
    live, alice, workspace, section_renders, settings
):
    space, node = live
    settings.QUORUM_PAGE_FRESH_MS = 60_000  # "recent" for the whole test: no clock in the way
    url = f"/w/{workspace.slug}/reviews/{space.pk}/"
    owner = _client(alice)
    first = owner.get(url).content.decode()
    rendered = sum(section_renders.values())
    seen = VERSION.search(first).group(1)

    node_dismiss(node=node, user=alice, reason="dup")  # a change from elsewhere (a reviewer)
    again = owner.get(url).content.decode()
    assert sum(section_renders.values()) == rendered  # the recent render, not a new one
    assert VERSION.search(again).group(1) == seen  # and the page says which version it shows
    assert "node-dismissed" not in _findings_section(again)

    cookie = _cookie(alice)

    async def catch_up() -> str:
        comm = WebsocketCommunicator(
            application, f"/ws/reviews/{space.pk}/?v={seen}", headers=[ORIGIN, cookie]
        )
        assert (await comm.connect())[0]
        message = await comm.receive_from(timeout=10)
        await comm.disconnect()
        return message

    assert "node-dismissed" in asyncio.run(catch_up())  # what changed since, on connect

    settings.QUORUM_PAGE_FRESH_MS = 0  # the window off: every version is rendered
    assert "node-dismissed" in _findings_section(owner.get(url).content.decode())


def test_a_persons_own_change_is_on_the_next_page_they_load(
    live, alice, workspace, section_renders, settings
):
    space, node = live
    settings.QUORUM_PAGE_FRESH_MS = 60_000
    url = f"/w/{workspace.slug}/reviews/{space.pk}/"
    owner = _client(alice)
    owner.get(url)
    answer = owner.post(
        f"{url}nodes/{node.pk}/", {"action": "dismiss", "reason": "duplicate"}, follow=True
    )
    assert answer.status_code == 200 and owner.cookies["quorum_wrote"].value.isdigit()
    assert "node-dismissed" in _findings_section(owner.get(url).content.decode())
    # Another browser of the same kind, which wrote nothing, gets that render of the last
    # second: it was made after the change, so it shows it too.
    assert "node-dismissed" in _findings_section(_client(alice).get(url).content.decode())


def test_a_persons_own_marks_are_not_served_to_another_member_of_the_same_role(
    live, alice, member_factory, workspace
):
    """Thread messages a person may still edit show an edit form on their page only."""
    from reviews.services import threads

    space, node = live
    bob = member_factory(workspace, "admin", "bob@example.com")
    carol = member_factory(workspace, "admin", "carol@example.com")
    message = threads.message_post(
        thread=threads.thread_get(space=space, key=f"node:{node.pk}"), user=bob, body="Mine"
    )
    url = f"/w/{workspace.slug}/reviews/{space.pk}/"
    assert f'id="edit-{message.pk}"' in _client(bob).get(url).content.decode()
    assert f'id="edit-{message.pk}"' not in _client(carol).get(url).content.decode()
