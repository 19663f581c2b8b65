"""Live guided review over websockets: server-rendered fragments, swapped out-of-band by htmx.

The socket is read-only: people act through the normal POST endpoints, and every change
reaches every open page through the space's channel group (reviews/events.py).
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

from reviews.events import space_group
from reviews.models import ReviewSpace
from workspaces.live_access import LiveAccessMixin
from workspaces.permissions import membership_get

log = logging.getLogger(__name__)


def csrf_context(scope: Mapping[str, Any]) -> dict[str, str]:
    """Forms rendered for a socket have no request: give {% csrf_token %} the browser's own CSRF
    cookie (an unmasked secret, which Django accepts), so they can still be posted."""
    token = scope.get("cookies", {}).get(settings.CSRF_COOKIE_NAME, "")
    return {"csrf_token": token} if token else {}


_CSRF_SLOT = "__quorum_csrf_slot__"
# One event's fragments per role, shared by the sockets of this process; the least recently
# used go first. Reached only from the one thread database_sync_to_async runs _render in.
_shared_renders: LRUCache[tuple[Any, ...], str] = LRUCache(maxsize=64)

# Each is templates/reviews/sections/<name>.html: one card with a stable id, swapped on its own.
SECTIONS = (
    "header",
    "axes",
    "disagreements",
    "process",
    "cohorts",
    "findings",
    "notes",
    "walkthrough",
    "streams",
)


class ReviewSpaceConsumer(LiveAccessMixin, AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.space_id = int(self.scope["url_route"]["kwargs"]["space_id"])
        # A page pinned to a round (`?round=N` in the switcher) keeps showing that round.
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        raw = (query.get("round") or [""])[0]
        self.round_number = int(raw) if raw.isdigit() and len(raw) < 10 else None
        allowed = await self._authorize()
        if not allowed:
            await self.close(code=4403)
            return
        await self.channel_layer.group_add(space_group(self.space_id), self.channel_name)
        await self.join_user_group()
        await self.accept()
        # A (re)connect may have missed events: bring the whole page up to date at once.
        await self._send_sections(SECTIONS)

    async def disconnect(self, code: int) -> None:
        if getattr(self, "membership", None) is not None:
            await self.channel_layer.group_discard(space_group(self.space_id), self.channel_name)
            await self.leave_user_group()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Nothing is accepted from the page over the socket."""

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
    def _render(
        self, sections: tuple[str, ...], node_id: int | None = None, event_id: str = ""
    ) -> str:
        """Render the sections for this person. An event's fragments depend only on the role
        (which buttons show), so every socket of this process with the same role reuses one
        render; only the CSRF token differs and is put in last. Cohorts (per-person reading
        progress) are never shared."""
        key = (
            (event_id, sections, node_id, self.membership.role, self.round_number)
            if event_id and "cohorts" not in sections
            else None
        )
        html = _shared_renders.get(key) if key else None
        if html is None:
            from reviews.views import review_context

            self.space.refresh_from_db(fields=["status", "updated_at"])
            context = {
                **review_context(self.membership, self.space, self.round_number),
                "csrf_token": _CSRF_SLOT,
            }
            parts = [render_to_string(f"reviews/sections/{name}.html", context) for name in sections]
            views = context["page"].views
            # A duplicate has no card of its own to swap: its canonical's card speaks for it.
            if node_id is not None and node_id in views and views[node_id].duplicate_of is None:
                context["node"] = context["page"].node(node_id)
                context["oob"] = True
                parts.append(render_to_string("reviews/partials/node.html", context))
            html = "\n".join(parts)
            if key:
                _shared_renders[key] = html
        return html.replace(_CSRF_SLOT, csrf_context(self.scope).get("csrf_token", ""))

    async def _send_sections(
        self, sections: tuple[str, ...], node_id: int | None = None, event: dict | None = None
    ) -> None:
        if not await self.may_send():
            return
        try:
            html = await self._render(sections, node_id, (event or {}).get("event_id", ""))
        except Exception:  # one failed render must not kill the socket
            log.exception("could not render live update for space %s", self.space_id)
            return
        await self.send(text_data=html)

    # Group events (type "review.x" → method review_x).
    async def review_node_added(self, event: dict) -> None:
        await self._send_sections(("findings", "header", "streams"), event=event)

    async def review_node_status(self, event: dict) -> None:
        await self._send_sections(
            ("header", "disagreements"), node_id=int(event["node_id"]), event=event
        )

    async def review_disagreement_decided(self, event: dict) -> None:
        await self._send_sections(("header", "disagreements", "findings"), event=event)

    async def review_space_status(self, event: dict) -> None:
        await self._send_sections(("header",), event=event)

    async def review_round_started(self, event: dict) -> None:
        await self._send_sections(SECTIONS, event=event)

    async def review_stage(self, event: dict) -> None:
        sections = (
            ("header", "streams", "cohorts")
            if event.get("stage") == "reviewers"
            else ("header", "streams")
        )
        await self._send_sections(sections, event=event)

    async def review_axis_changed(self, event: dict) -> None:
        await self._send_sections(("axes", "header"), event=event)

    async def review_verdict(self, event: dict) -> None:
        await self._send_sections(("header", "axes", "findings"), event=event)

    async def review_published(self, event: dict) -> None:
        await self._send_sections(("header",), event=event)

    async def review_note_added(self, event: dict) -> None:
        await self._send_sections(("notes",), event=event)

    async def review_ticket(self, event: dict) -> None:
        """A ticket was dismissed, asked for as an issue, or its issue request moved."""
        await self._send_sections(("notes",), event=event)
