"""Live guided review over websockets: server-rendered fragments, swapped out-of-band by htmx.

The socket is read-only: people act through the normal POST endpoints, and every change
reaches every open page through the space's channel group (reviews/live/events.py). An event
re-renders the sections it can change (reviews.live.events.EVENT_SECTIONS), never the page. On
connect the page says which version of the live state it shows (`?v=`); only the sections
changed since then are sent (reviews/live/version.py), and a page that is current gets just
the version marker.

A page that falls behind catches up rather than queueing: events only add to what its socket
still has to send (the sections they change, the newest version), and one task per socket
renders and sends that, so a socket never has more than one render in flight and a slow one
gets the newest state, not a backlog. Renders and access checks run in the live pool
(workspaces.live_access.off_thread), never on the one ORM thread of the process, and a
section is rendered once per version for every socket of the process that shows it alike
(reviews.web.section_renders). A round's verdict does not wait its turn: the header that shows
it is rendered in a pool of its own and sent at once; the rest of its update follows with the
version.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import Http404
from django.utils.html import escape

from reviews.live import version as live_version
from reviews.live.events import (
    BATCH,
    CARD_SECTIONS,
    EVENT_SECTIONS,
    SECTIONS,
    batch_sections,
    card_of,
    space_group,
)
from reviews.live.window import AT_ONCE
from reviews.models import ReviewSpace
from reviews.web.section_renders import (
    SharedRenders,
    Viewer,
    render_sections,
    viewer_of,
    with_csrf,
)
from workspaces.live_access import (
    LiveAccessMixin,
    csrf_context,
    off_thread,
    render_off_thread,
    urgent_off_thread,
)
from workspaces.permissions import membership_get

log = logging.getLogger(__name__)

# Reached only from the event loop's thread.
_shared = SharedRenders()
# The section that shows a round's verdict, sent ahead of the rest of the verdict's update.
VERDICT_SECTION = "header"


def version_marker(token: str) -> str:
    """Swapped into #live-version with every message: the version the page now shows. Alone,
    it is the whole answer to a page that connects up to date."""
    return f'<div id="live-version" hidden data-version="{escape(token)}" hx-swap-oob="true"></div>'


def live_sections(events: list[dict[str, Any]]) -> tuple[tuple[str, ...], int | None]:
    """What one message re-renders: the sections its events can change, where a lone status
    change or thread message of one finding stands for the list and the diff by its card
    alone (both copies of it)."""
    cards = {card for e in events if (card := card_of(e)) is not None}
    others = [e for e in events if card_of(e) is None]
    sections = batch_sections(events)
    if len(cards) == 1 and not set(CARD_SECTIONS) & set(batch_sections(others)):
        return tuple(s for s in sections if s not in CARD_SECTIONS), cards.pop()
    return sections, None


def newer(token: str, than: str) -> bool:
    """Whether version `token` is after `than` (another epoch counts as newer: it came later)."""
    epoch, _, n = token.partition("-")
    old_epoch, _, old_n = than.partition("-")
    if epoch != old_epoch or not (n.isdigit() and old_n.isdigit()):
        return bool(token)
    return int(n) > int(old_n)


@dataclass
class Pending:
    """What a socket still has to send: the events since its last send (folded into sections
    and a card when it sends), whole sections (its first sync) and the newest version."""

    events: list[dict[str, Any]] = field(default_factory=list)
    sections: set[str] = field(default_factory=set)
    version: str = ""
    share: bool = True

    def add(self, events: list[dict[str, Any]], version: str) -> None:
        self.events += events
        if newer(version, self.version):
            self.version = version

    def plan(self) -> tuple[tuple[str, ...], int | None]:
        """The sections to render and the one card that stands for the list and the diff."""
        sections, card = live_sections(self.events)
        whole = set(sections) | self.sections
        if card is not None and set(CARD_SECTIONS) & self.sections:
            card = None
        return tuple(s for s in SECTIONS if s in whole), card


class ReviewSpaceConsumer(LiveAccessMixin, AsyncWebsocketConsumer):
    _pending: Pending | None = None
    _sender: asyncio.Task[None] | None = None
    _urgent: asyncio.Task[None] | None = None
    # The newest version whose header this page got: an older update sent later leaves it out.
    _header_version = ""

    async def connect(self) -> None:
        self.space_id = int(self.scope["url_route"]["kwargs"]["space_id"])
        # A page pinned to a round (`?round=N` in the switcher) keeps showing that round.
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        raw = (query.get("round") or [""])[0]
        self.round_number = int(raw) if raw.isdigit() and len(raw) < 10 else None
        page_token = (query.get("v") or [""])[0][:64]
        allowed = await self._authorize()
        if not allowed:
            await self.close(code=4403)
            return
        # Join first, then read the version: a change after the read arrives as an event.
        await self.channel_layer.group_add(space_group(self.space_id), self.channel_name)
        await self.join_user_group()
        await self.accept()
        # Redis, not the database: off the one thread the ORM calls share.
        state = await sync_to_async(live_version.current, thread_sensitive=False)(self.space_id)
        missed = live_version.sections_since(page_token, state, SECTIONS)
        token = state.token if state else ""
        # Renders of the same version are alike; without one (Redis lost it) nothing is shared.
        first = Pending(sections=set(missed), version=token, share=bool(token))
        if self._pending is not None:  # an event came in while the version was read
            first.add(self._pending.events, self._pending.version)
        self._pending = first
        self._start_sender()

    async def disconnect(self, code: int) -> None:
        for task in (self._sender, self._urgent):
            if task is not None:
                task.cancel()
        if getattr(self, "membership", None) is not None:
            await self.channel_layer.group_discard(space_group(self.space_id), self.channel_name)
            await self.leave_user_group()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Nothing is accepted from the page over the socket."""

    async def dispatch(self, message: dict) -> None:
        """Group events ("review.x") are added to what this socket still has to send; its
        sender renders EVENT_SECTIONS' sections for them. Never waits for a render: the
        channel is read as fast as events come."""
        kind = message.get("type", "")
        events = message.get("events", []) if kind == BATCH else [message]
        if kind != BATCH and kind not in EVENT_SECTIONS:
            await super().dispatch(message)
            return
        if self._pending is None:
            self._pending = Pending()
        version = message.get("version", "")
        self._pending.add(events, version)
        if getattr(self, "membership", None) is None:
            return  # connecting: its first send has it all
        if version and any(e.get("type") in AT_ONCE for e in events):
            if self._urgent is not None:  # a newer verdict's header supersedes it
                self._urgent.cancel()
            self._urgent = asyncio.get_running_loop().create_task(self._send_verdict(version))
        if self._sender is None:
            self._start_sender()

    def _start_sender(self) -> None:
        self._sender = asyncio.get_running_loop().create_task(self._send_pending())

    async def _send_pending(self) -> None:
        """One render at a time per socket: whatever came in meanwhile goes in the next."""
        try:
            while self._pending is not None:
                pending, self._pending = self._pending, None
                sections, card = pending.plan()
                await self._send_sections(
                    sections, version=pending.version, card=card, share=pending.share
                )
        finally:
            self._sender = None

    @off_thread
    def _authorize(self) -> bool:
        user = self.scope.get("user")
        space = (
            ReviewSpace.objects.select_related("workspace", "pull_request__repository")
            .filter(pk=self.space_id)
            .first()
        )
        if space is None:
            return False
        try:
            membership = membership_get(user=user, slug=space.workspace.slug)
        except Http404:
            return False
        self.membership, self.space = membership, space
        # Membership was read just now and the session by the auth middleware: the first
        # send need not check them again.
        self._checked_at = time.monotonic()
        return True

    def _viewer_now(self) -> Viewer:
        self.space.refresh_from_db(fields=["status", "updated_at"])
        return viewer_of(self.membership, self.space, self.round_number)

    def _render_now(self, sections: tuple[str, ...], card: int | None = None) -> dict[str, str]:
        self.space.refresh_from_db(fields=["status", "updated_at"])
        return render_sections(self.membership, self.space, self.round_number, sections, card)

    # Who is looking (two short queries) is read with the access checks: queued behind the
    # other pages' renders it doubled the wait of every update.
    _viewer = off_thread(_viewer_now)
    _render_fresh = render_off_thread(_render_now)
    _viewer_urgent = urgent_off_thread(_viewer_now)
    _render_urgent = urgent_off_thread(_render_now)

    async def _send_verdict(self, version: str) -> None:
        """A round's verdict is what the people on its page wait for: the header that shows it
        goes out at once, rendered in the urgent pool (and shared like any section of this
        version), while the rest of the update waits its turn and comes with the version."""
        try:
            viewer = await self._viewer_urgent()
            parts = await _shared.get(
                (version, viewer, None), (VERDICT_SECTION,), self._render_urgent
            )
        except Exception:  # the update with everything still follows
            log.exception("could not render the verdict of space %s", self.space_id)
            return
        if not newer(version, self._header_version) or not await self.may_send():
            return
        self._header_version = version
        token = csrf_context(self.scope).get("csrf_token", "")
        await self.send(text_data=with_csrf(parts[VERDICT_SECTION], token))

    async def _render(
        self, sections: tuple[str, ...], version: str, card: int | None, share: bool
    ) -> dict[str, str]:
        """Render the sections for this person: taken from the renders of this version for
        a viewer alike when they are there (reviews.web.section_renders), rendered once for
        all the sockets that need them otherwise."""
        names = (*sections, "card") if card is not None else sections
        if not share or not version:
            return await self._render_fresh(sections, card)
        viewer = await self._viewer()

        async def render(missing: tuple[str, ...]) -> dict[str, str]:
            wanted = tuple(n for n in missing if n != "card")
            return await self._render_fresh(wanted, card if "card" in missing else None)

        return await _shared.get((version, viewer, card), names, render)

    async def _send_sections(
        self, sections: tuple[str, ...], *, version: str, card: int | None, share: bool
    ) -> None:
        parts: dict[str, str] = {}
        if sections or card is not None:
            try:
                parts = await self._render(sections, version, card, share)
            except Exception:  # one failed render must not kill the socket
                log.exception("could not render live update for space %s", self.space_id)
                return
        if not await self.may_send():
            return
        if newer(self._header_version, version):  # the verdict went ahead of this update
            parts.pop(VERDICT_SECTION, None)
        elif VERDICT_SECTION in parts:
            self._header_version = version
        # Only the CSRF token is put in per socket.
        html = with_csrf(
            "\n".join(part for part in parts.values() if part),
            csrf_context(self.scope).get("csrf_token", ""),
        )
        marker = version_marker(version)
        await self.send(text_data=f"{html}\n{marker}" if html else marker)
