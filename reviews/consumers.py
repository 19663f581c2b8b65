"""Live guided review over websockets: server-rendered fragments, swapped out-of-band by htmx.

The socket is read-only: people act through the normal POST endpoints, and every change
reaches every open page through the space's channel group (reviews/events.py). An event
re-renders the sections it can change (reviews.events.EVENT_SECTIONS), never the page. On
connect the page says which version of the live state it shows (`?v=`); only the sections
changed since then are sent (reviews/live_version.py), and a page that is current gets just
the version marker.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from cachetools import LRUCache
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http import Http404
from django.template.loader import render_to_string
from django.utils.html import escape

from reviews import live_version
from reviews.events import EVENT_SECTIONS, SECTIONS, space_group
from reviews.models import CohortProgress, ReviewSpace
from workspaces.live_access import LiveAccessMixin
from workspaces.permissions import membership_get

log = logging.getLogger(__name__)


def csrf_context(scope: Mapping[str, Any]) -> dict[str, str]:
    """Forms rendered for a socket have no request: give {% csrf_token %} the browser's own CSRF
    cookie (an unmasked secret, which Django accepts), so they can still be posted."""
    token = scope.get("cookies", {}).get(settings.CSRF_COOKIE_NAME, "")
    return {"csrf_token": token} if token else {}


_CSRF_SLOT = "__quorum_csrf_slot__"
# One event's fragments per role (and cohort reading state), shared by the sockets of this
# process; the least recently used go first. Reached only from the one thread
# database_sync_to_async runs _render in.
_shared_renders: LRUCache[tuple[Any, ...], str] = LRUCache(maxsize=64)


def version_marker(token: str) -> str:
    """Swapped into #live-version with every message: the version the page now shows. Alone,
    it is the whole answer to a page that connects up to date."""
    return (
        f'<div id="live-version" hidden data-version="{escape(token)}" hx-swap-oob="true"></div>'
    )


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
        state = await database_sync_to_async(live_version.current)(self.space_id)
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
        sections = EVENT_SECTIONS.get(message.get("type", ""))
        if sections is None:
            await super().dispatch(message)
            return
        await self._send_sections(
            sections, share=message.get("event_id", ""), version=message.get("version", "")
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
        return True

    @database_sync_to_async
    def _render(self, sections: tuple[str, ...], share: str) -> str:
        """Render the sections for this person. They depend only on the role (which buttons
        show) and, for cohorts, on which cohorts the person has read, so every socket of this
        process alike reuses one render per event; only the CSRF token differs and is put in
        last."""
        read = (
            frozenset(
                CohortProgress.objects.filter(
                    user_id=self.membership.user_id, space_id=self.space_id
                ).values_list("cohort_key", flat=True)
            )
            if "cohorts" in sections
            else None
        )
        key = (share, sections, self.membership.role, self.round_number, read) if share else None
        html = _shared_renders.get(key) if key else None
        if html is None:
            from reviews.views import review_context

            self.space.refresh_from_db(fields=["status", "updated_at"])
            context = {
                **review_context(self.membership, self.space, self.round_number),
                "csrf_token": _CSRF_SLOT,
            }
            html = "\n".join(
                render_to_string(f"reviews/sections/{name}.html", context) for name in sections
            )
            if key:
                _shared_renders[key] = html
        return html.replace(_CSRF_SLOT, csrf_context(self.scope).get("csrf_token", ""))

    async def _send_sections(self, sections: tuple[str, ...], *, share: str, version: str) -> None:
        if not await self.may_send():
            return
        html = ""
        if sections:
            try:
                html = await self._render(sections, share)
            except Exception:  # one failed render must not kill the socket
                log.exception("could not render live update for space %s", self.space_id)
                return
        marker = version_marker(version)
        await self.send(text_data=f"{html}\n{marker}" if html else marker)
