"""The approvals inbox socket: live requests, and approver presence."""

from __future__ import annotations

import asyncio
import contextlib

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import Http404
from django.template.loader import render_to_string

from guardrails.events import approvals_group
from guardrails.presence import PRESENCE_HEARTBEAT, presence_leave, presence_touch
from guardrails.views import inbox_context
from workspaces.live_access import LiveAccessMixin, csrf_context
from workspaces.permissions import allows, membership_get
from workspaces.rules import Perm


class ApprovalsConsumer(LiveAccessMixin, AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.membership = await self._membership()
        if self.membership is None:
            await self.close(code=4403)
            return
        self.group = approvals_group(self.membership.workspace_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.join_user_group()
        await self.accept()
        self.heartbeat = None
        if allows(self.membership, Perm.DECIDE_APPROVAL):
            await self._touch()
            self.heartbeat = asyncio.create_task(self._beat())
        await self.send(text_data=await self._render())

    async def disconnect(self, code: int) -> None:
        if getattr(self, "membership", None) is None:
            return
        if self.heartbeat is not None:
            self.heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.heartbeat
        await database_sync_to_async(presence_leave)(channel_name=self.channel_name)
        await self.channel_layer.group_discard(self.group, self.channel_name)
        await self.leave_user_group()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Decisions go through the POST endpoints, never through the socket."""

    async def approvals_changed(self, event: dict) -> None:
        if await self.may_send():
            await self.send(text_data=await self._render())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(PRESENCE_HEARTBEAT)
            if not await self.may_send(fresh=True):
                return  # a removed approver stops counting as present
            await self._touch()

    async def _touch(self) -> None:
        await database_sync_to_async(presence_touch)(
            channel_name=self.channel_name,
            workspace_id=self.membership.workspace_id,
            user_id=self.membership.user_id,
        )

    @database_sync_to_async
    def _membership(self):
        slug = self.scope["url_route"]["kwargs"]["slug"]
        try:
            return membership_get(user=self.scope.get("user"), slug=slug)
        except Http404:
            return None

    @database_sync_to_async
    def _render(self) -> str:
        # `live`: this render comes over the socket, so the viewer's own presence is counted.
        context = {**inbox_context(self.membership), **csrf_context(self.scope), "live": True}
        return render_to_string("guardrails/approvals.html#inbox", context)
