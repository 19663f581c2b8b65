"""/ws/reviews/<id>/: who may listen, and live fragments after a change."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import transaction
from django.test import Client

from config.asgi import application
from reviews.live import version as live_version
from reviews.live.consumers import live_sections
from reviews.live.events import EVENT_SECTIONS, SECTIONS
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_dismiss
from reviews.services.notes import note_record
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


# --- initial sync by version ---------------------------------------------------------------

MARKER = 'id="live-version"'


def _page_version(user, space) -> str:
    client = Client()
    client.force_login(user)
    html = client.get(f"/w/{space.workspace.slug}/reviews/{space.pk}/").content.decode()
    found = re.search(r'ws-connect="/ws/reviews/\d+/\?v=([^"&]*)', html)
    assert found, "the page passes its live version to the socket"
    return found.group(1)


def _first_message(space_id: int, cookie, version: str) -> str:
    async def scenario():
        comm = WebsocketCommunicator(
            application, f"/ws/reviews/{space_id}/?v={version}", headers=[ORIGIN, cookie]
        )
        connected, _ = await comm.connect()
        assert connected
        first = await comm.receive_from(timeout=5)
        quiet = await comm.receive_nothing(timeout=0.3)
        await comm.disconnect()
        assert quiet, "the sync is one message"
        return first

    return asyncio.run(scenario())


def _sections_in(message: str) -> set[str]:
    ids = {
        'id="review-header"': "header",
        'id="review-axes"': "axes",
        'id="disagreements"': "disagreements",
        'id="review-process"': "process",
        'id="review-files"': "files",
        'id="review-cohorts"': "cohorts",
        'id="review-findings"': "findings",
        'id="review-notes"': "notes",
        'id="review-walkthrough"': "walkthrough",
        'id="review-streams"': "streams",
    }
    return {name for marker, name in ids.items() if marker in message}


def test_a_page_that_is_current_gets_only_the_version_marker(live, alice):
    space, _node = live
    version = _page_version(alice, space)
    first = _first_message(space.pk, _cookie(alice), version)
    assert _sections_in(first) == set()
    assert MARKER in first and f'data-version="{version}"' in first
    assert len(first.encode()) < 200


def test_a_page_that_missed_a_change_gets_only_the_sections_it_changed(live, alice):
    space, node = live
    version = _page_version(alice, space)
    node_dismiss(node=node, user=alice, reason="dup")  # while no socket is open
    first = _first_message(space.pk, _cookie(alice), version)
    assert _sections_in(first) == set(EVENT_SECTIONS["review.node_status"])
    assert f'id="node-{node.pk}"' in first and "node-dismissed" in first
    # The marker now names the newer version: a page given it is current again.
    found = re.search(r'data-version="([^"]+)"', first)
    assert found
    newer = found.group(1)
    assert newer != version
    assert _sections_in(_first_message(space.pk, _cookie(alice), newer)) == set()


@pytest.mark.parametrize("page", ["no version", "another epoch", "from the future", "state lost"])
def test_a_version_that_cannot_be_vouched_for_gets_the_whole_page(live, alice, page):
    space, _node = live
    version = _page_version(alice, space)
    epoch, _, n = version.partition("-")
    if page == "state lost":  # Redis flushed or the key expired after the page rendered
        live_version.store().forget(space.pk)
    sent = {
        "no version": "",
        "another epoch": f"0{epoch}-{n}",
        "from the future": f"{epoch}-{int(n) + 5}",
        "state lost": version,
    }[page]
    first = _first_message(space.pk, _cookie(alice), sent)
    assert _sections_in(first) == set(SECTIONS)


def test_sections_since_is_a_pure_comparison():
    state = live_version.LiveState("e", 7, {"header": 7, "axes": 3, "notes": 5})
    assert live_version.sections_since("e-7", state, SECTIONS) == ()
    assert live_version.sections_since("e-4", state, SECTIONS) == ("header", "notes")
    assert live_version.sections_since("e-2", state, SECTIONS) == ("header", "axes", "notes")
    assert live_version.sections_since("x-7", state, SECTIONS) == SECTIONS
    assert live_version.sections_since("e-8", state, SECTIONS) == SECTIONS
    assert live_version.sections_since("e-7", None, SECTIONS) == SECTIONS
    assert live_version.sections_since("garbage", state, SECTIONS) == SECTIONS


def test_every_event_the_code_sends_to_a_review_page_names_its_sections():
    """An event missing from the table would raise in its service; one in the table that no
    code sends is dead. Walks the source for emit("…") and space_send(…, "…")."""
    root = Path(__file__).resolve().parents[2]
    senders = ("emit", "space_send")
    sent = set()
    for path in [*root.glob("reviews/**/*.py"), *root.glob("guardrails/**/*.py")]:
        for call in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(call, ast.Call)
                and getattr(call.func, "id", getattr(call.func, "attr", "")) in senders
                and len(call.args) >= 2
                and isinstance(call.args[1], ast.Constant)
            ):
                sent.add(call.args[1].value)
    assert sent == set(EVENT_SECTIONS)
    assert all(set(s) <= set(SECTIONS) for s in EVENT_SECTIONS.values())


def test_one_transactions_events_reach_a_page_as_one_message(live, alice, review_factory):
    space, node = live
    other = node_record(stream=node.stream, payload=node_payload(title="Second finding")).node
    cookie = _cookie(alice)

    def dismiss_both() -> None:
        with transaction.atomic():
            node_dismiss(node=node, user=alice, reason="dup")
            node_dismiss(node=other, user=alice, reason="dup")

    async def scenario():
        comm = _communicator(space.pk, ORIGIN, cookie)
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_from(timeout=5)  # the initial sync
        await database_sync_to_async(dismiss_both)()
        update = await comm.receive_from(timeout=5)
        nothing_more = await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()
        return update, nothing_more

    update, nothing_more = asyncio.run(scenario())
    assert nothing_more
    # Two cards moved: the findings section is re-sent whole, with both dismissed.
    assert 'id="review-findings"' in update and 'id="review-header"' in update
    assert update.count("node-dismissed") >= 2


def test_a_lone_status_change_is_sent_as_its_card():
    status = {"type": "review.node_status", "node_id": 7}
    verdict = {"type": "review.verdict"}
    added = {"type": "review.node_added", "node_id": 8}
    sections, card = live_sections([status, verdict])
    assert card == 7 and "findings" not in sections and "header" in sections
    sections, card = live_sections([status, added])
    assert card is None and "findings" in sections and "cohorts" in sections
    sections, card = live_sections([status, {**status, "node_id": 9}])
    assert card is None and "findings" in sections


def test_a_thread_message_is_sent_where_its_subject_shows():
    def of(subject: str, node_id: int | None) -> tuple[tuple[str, ...], int | None]:
        return live_sections([{"type": "review.thread", "subject": subject, "node_id": node_id}])

    assert of("node:7", 7) == ((), 7)  # the finding's card, both copies
    assert of("disagreement:7", 7) == (("disagreements",), None)
    assert of("note:3:0", None) == (("notes",), None)
    status = {"type": "review.node_status", "node_id": 7}
    thread = {"type": "review.thread", "subject": "node:7", "node_id": 7}
    sections, card = live_sections([status, thread])
    assert card == 7 and not {"findings", "cohorts"} & set(sections)


def test_a_reply_reaches_every_open_page_with_the_edit_form_only_on_its_authors(
    live, alice, member_factory, workspace
):
    from reviews.services import threads

    space, node = live
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    cookies = _cookie(alice), _cookie(bob)
    index = note_record(stream=node.stream, kind="comment", fields={"body": "A remark"})

    def post(key: str, body: str) -> int:
        thread = threads.thread_get(space=space, key=key)
        return threads.message_post(thread=thread, user=alice, body=body).pk

    async def scenario():
        pages = [_communicator(space.pk, ORIGIN, cookie) for cookie in cookies]
        for comm in pages:
            assert (await comm.connect())[0]
            await comm.receive_from(timeout=5)  # the initial sync
        pk = await database_sync_to_async(post)(f"node:{node.pk}", "Live reply")
        on_card = [await comm.receive_from(timeout=5) for comm in pages]
        await database_sync_to_async(post)(f"note:{node.stream.pk}:{index}", "About the remark")
        on_note = [await comm.receive_from(timeout=5) for comm in pages]
        for comm in pages:
            await comm.disconnect()
        return pk, on_card, on_note

    pk, (alices, bobs), on_note = asyncio.run(scenario())
    for update in (alices, bobs):
        assert "Live reply" in update and f'id="node-{node.pk}"' in update
        assert _sections_in(update) == set()  # the card alone, not the list or the diff
    assert f'id="edit-{pk}"' in alices and f'id="edit-{pk}"' not in bobs
    for update in on_note:
        assert "About the remark" in update and _sections_in(update) == {"notes"}
