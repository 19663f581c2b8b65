"""Pages that follow a verdict over a websocket: the reviews list (a row is re-rendered when
its verdict moves) and the publish preview (planned again).

Read-only like the review page's socket; membership is re-checked before every send. Their
database work runs in the live pools (workspaces.live_access), off the consumers' ORM thread.
"""

from __future__ import annotations

import logging

from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import Http404
from django.template.loader import render_to_string

from reviews.live.events import BATCH, list_group, space_group
from reviews.models import ReviewSpace
from reviews.selectors import spaces_for_list
from reviews.services.publish_plans import PublishError
from reviews.web.presenters import publish_preview_context
from workspaces.live_access import LiveAccessMixin, csrf_context, off_thread, render_off_thread
from workspaces.permissions import membership_get

log = logging.getLogger(__name__)


class ReviewListConsumer(LiveAccessMixin, AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.membership = await self._membership()
        if self.membership is None:
            await self.close(code=4403)
            return
        self.group = list_group(self.membership.workspace_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.join_user_group()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if getattr(self, "membership", None) is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.leave_user_group()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Nothing is accepted from the page over the socket."""

    async def reviews_row(self, event: dict) -> None:
        if not await self.may_send():
            return
        html = await self._row(int(event["space_id"]))
        if html:
            await self.send(text_data=html)

    @off_thread
    def _membership(self):
        try:
            return membership_get(
                user=self.scope.get("user"), slug=self.scope["url_route"]["kwargs"]["slug"]
            )
        except Http404:
            return None

    @render_off_thread
    def _row(self, space_id: int) -> str:
        # Scoped to the member's workspace: another workspace's space id renders nothing.
        row = spaces_for_list(workspace_id=self.membership.workspace_id).filter(pk=space_id).first()
        if row is None:
            return ""
        context = {"s": row, "workspace": self.membership.workspace, "oob": True}
        return render_to_string("reviews/partials/list_row.html", context)


class PublishPreviewConsumer(LiveAccessMixin, AsyncWebsocketConsumer):
    """The publish preview follows the verdict: after a change it is planned again against
    GitHub and swapped in, with the new digest its form binds. Only verdict events are
    handled; the space's other events are none of this page's business."""

    async def connect(self) -> None:
        self.space_id = int(self.scope["url_route"]["kwargs"]["space_id"])
        self.membership = await self._membership()
        if self.membership is None:
            await self.close(code=4403)
            return
        await self.channel_layer.group_add(space_group(self.space_id), self.channel_name)
        await self.join_user_group()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if getattr(self, "membership", None) is not None:
            await self.channel_layer.group_discard(space_group(self.space_id), self.channel_name)
            await self.leave_user_group()

    async def dispatch(self, message: dict) -> None:
        kind = message.get("type", "")
        if kind == BATCH:  # one transaction's events: a verdict among them is news here
            if any(e.get("type") == "review.verdict" for e in message.get("events", [])):
                await self.review_verdict(message)
        elif kind.startswith("websocket.") or kind in ("access.changed", "review.verdict"):
            await super().dispatch(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Nothing is accepted from the page over the socket."""

    async def review_verdict(self, event: dict) -> None:
        if not await self.may_send():
            return
        html = await self._preview()
        if html:
            await self.send(text_data=html)

    @off_thread
    def _membership(self):
        space = ReviewSpace.objects.select_related("workspace").filter(pk=self.space_id).first()
        if space is None:
            return None
        try:
            membership = membership_get(user=self.scope.get("user"), slug=space.workspace.slug)
        except Http404:
            return None
        self.space = space
        return membership

    @render_off_thread
    def _preview(self) -> str:
        try:
            context = publish_preview_context(self.membership, self.space)
        except PublishError:
            return ""  # the page already shows the plan it could make; a reload says why
        except Exception:  # GitHub unreachable or unconfigured: never kill the socket
            log.exception("could not plan the live publish preview of space %s", self.space_id)
            return ""
        context.update(csrf_context(self.scope))
        return render_to_string("reviews/publish.html#preview", context)
