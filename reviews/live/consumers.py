"""Live guided review over websockets: server-rendered fragments, swapped out-of-band by htmx.

The socket is read-only: people act through the normal POST endpoints, and every change
reaches every open page through the space's channel group (reviews/live/events.py). An event
re-renders the sections it can change (reviews.live.events.EVENT_SECTIONS), never the page. On
connect the page says which version of the live state it shows (`?v=`); only the sections
changed since then are sent (reviews/live/version.py), and a page that is current gets just
the version marker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from cachetools import LRUCache
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import Http404
from django.template.loader import render_to_string
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
from reviews.models import CohortProgress, FileViewed, ReviewSpace
from reviews.selectors import THREAD_SECTIONS, editable_message_ids
from reviews.web.presenters import review_context
from workspaces.live_access import LiveAccessMixin, csrf_context
from workspaces.permissions import membership_get

log = logging.getLogger(__name__)


_CSRF_SLOT = "__quorum_csrf_slot__"
# One event's fragments per role (and cohort reading state), shared by the sockets of this
# process; the least recently used go first. Reached only from the event loop's thread.
_shared_renders: LRUCache[tuple[Any, ...], str] = LRUCache(maxsize=64)
# The renders under way: the sockets that want the same one wait for it.
_rendering: dict[tuple[Any, ...], asyncio.Future[str]] = {}


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


class ReviewSpaceConsumer(LiveAccessMixin, AsyncWebsocketConsumer):
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
        await self._send_sections(missed, share=f"sync:{token}" if token else "", version=token)

    async def disconnect(self, code: int) -> None:
        if getattr(self, "membership", None) is not None:
            await self.channel_layer.group_discard(space_group(self.space_id), self.channel_name)
            await self.leave_user_group()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Nothing is accepted from the page over the socket."""

    async def dispatch(self, message: dict) -> None:
        """Group events ("review.x") re-render the sections EVENT_SECTIONS names for them."""
        kind = message.get("type", "")
        events = message.get("events", []) if kind == BATCH else [message]
        if kind != BATCH and kind not in EVENT_SECTIONS:
            await super().dispatch(message)
            return
        sections, card = live_sections(events)
        await self._send_sections(
            sections,
            share=message.get("event_id", ""),
            version=message.get("version", ""),
            card=card,
        )

    @database_sync_to_async
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

    @database_sync_to_async
    def _personal_marks(self, reading: bool, threads: bool) -> frozenset[str]:
        """The only per-person parts of a render: the person's cohorts read and files viewed
        (`reading`), and the thread messages they may still edit (`threads`)."""
        user_id = self.membership.user_id
        marks: list[str] = []
        if reading:
            cohorts = CohortProgress.objects.filter(user_id=user_id, space_id=self.space_id)
            files = FileViewed.objects.filter(user_id=user_id, space_id=self.space_id)
            marks += [f"c:{k}" for k in cohorts.values_list("cohort_key", flat=True)]
            marks += [f"f:{k}" for k in files.values_list("file_key", flat=True)]
        if threads:
            marks += [f"m:{pk}" for pk in editable_message_ids(self.space_id, user_id)]
        return frozenset(marks)

    @database_sync_to_async
    def _render_fresh(self, sections: tuple[str, ...], card: int | None) -> str:
        self.space.refresh_from_db(fields=["status", "updated_at"])
        context = {
            # `focus`: the card of a finding beyond its group's first page is loaded too.
            **review_context(self.membership, self.space, self.round_number, focus=card),
            "csrf_token": _CSRF_SLOT,
        }
        parts = [render_to_string(f"reviews/sections/{n}.html", context) for n in sections]
        views = context["page"].views
        # A duplicate has no card of its own: its canonical's card speaks for it.
        if card is not None and card in views and views[card].duplicate_of is None:
            context["node"] = context["page"].node(card)
            context["oob"] = True
            context["inline"] = card in context["inline_node_ids"]
            parts.append(render_to_string("reviews/partials/node.html", context))
        return "\n".join(parts)

    async def _render(self, sections: tuple[str, ...], share: str, card: int | None = None) -> str:
        """Render the sections for this person. They depend only on the role (which buttons
        show), for cohorts and files on what the person has read, and for threads on which
        messages the person may still edit, so the sockets of this
        process alike share one render per event: the first renders, the others wait for it
        without a trip to the database thread. Only the CSRF token differs and is put in last."""
        reading = "cohorts" in sections or "files" in sections
        threads = card is not None or bool(THREAD_SECTIONS & set(sections))
        read = await self._personal_marks(reading, threads) if reading or threads else None
        key = (share, sections, card, self.membership.role, self.round_number, read)
        if not share:
            html = await self._render_fresh(sections, card)
        elif (cached := _shared_renders.get(key)) is not None:
            html = cached
        elif (pending := _rendering.get(key)) is not None:
            html = await pending
        else:
            future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            # Nobody may be waiting when it fails: retrieve the error so it is not reported.
            future.add_done_callback(lambda f: None if f.cancelled() else f.exception())
            _rendering[key] = future
            try:
                html = await self._render_fresh(sections, card)
                _shared_renders[key] = html
                future.set_result(html)
            except BaseException as error:
                future.set_exception(error)
                raise
            finally:
                _rendering.pop(key, None)
        return html.replace(_CSRF_SLOT, csrf_context(self.scope).get("csrf_token", ""))

    async def _send_sections(
        self, sections: tuple[str, ...], *, share: str, version: str, card: int | None = None
    ) -> None:
        html = ""
        if sections or card is not None:
            try:
                # Shared renders first: a socket's access check (a trip to the database thread)
                # then no longer holds up the render every socket waits for.
                html = await self._render(sections, share, card)
            except Exception:  # one failed render must not kill the socket
                log.exception("could not render live update for space %s", self.space_id)
                return
        if not await self.may_send():
            return
        marker = version_marker(version)
        await self.send(text_data=f"{html}\n{marker}" if html else marker)
