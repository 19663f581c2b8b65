"""The MCP server over streamable HTTP at /mcp/<workspace>/, inside Quorum's ASGI app.

Every request must carry a live API token as `Authorization: Bearer …` (401 otherwise, before
the SDK sees it); the tools authenticate it again for each call, so a token revoked during a
session stops at its next call. A session belongs to the token that opened it: the SDK answers
another token's request for it as if it did not exist. Host and Origin are checked against
Django's ALLOWED_HOSTS (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import Http404
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from reviews.mcp.server import build_server
from workspaces.permissions import membership_get
from workspaces.services import api_token_authenticate

PATH = re.compile(r"^/mcp/(?P<slug>[-a-zA-Z0-9_]+)/?$")
SLUG_KEY = "quorum.workspace"


def _bearer(headers: Any) -> str:
    value = headers.get("authorization", "") if headers else ""
    scheme, _, secret = value.partition(" ")
    return secret.strip() if scheme.lower() == "bearer" else ""


def _caller_source(ctx: Context) -> tuple[str, str]:
    request = ctx.request_context.request
    scope = getattr(request, "scope", {}) or {}
    return _bearer(ctx.headers), scope.get(SLUG_KEY, "")


def _security() -> TransportSecuritySettings:
    hosts = [h for h in settings.ALLOWED_HOSTS if h != "*"]
    if "*" in settings.ALLOWED_HOSTS or not hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed = [h for host in hosts for h in (host, f"{host}:*")]
    origins = [f"{s}://{h}" for h in allowed for s in ("http", "https")]
    return TransportSecuritySettings(allowed_hosts=allowed, allowed_origins=origins)


async def _answer(send: Any, status: int, detail: str, **headers: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw = [
        (b"content-type", b"application/json"),
        *((k.encode(), v.encode()) for k, v in headers.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _member(secret: str, slug: str) -> tuple[Any, bool]:
    """The token's user, and whether they belong to workspace `slug` (a non-member is told it
    does not exist, as the pages and the API tell them)."""
    user = api_token_authenticate(secret) if secret else None
    if user is None:
        return None, False
    try:
        membership_get(user=user, slug=slug)
    except Http404:
        return user, False
    return user, True


class McpHttpApp:
    def __init__(self) -> None:
        self.server = build_server(_caller_source)
        # Creates the session manager; its task group is started on the first request, since
        # daphne sends no ASGI lifespan events.
        self.server.streamable_http_app(transport_security=_security())
        self._running: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def _run_sessions(self) -> None:
        async with self.server.session_manager.run():
            self._ready.set()
            await asyncio.Event().wait()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        match = PATH.match(scope["path"])
        if match is None:
            await _answer(send, 404, "Use /mcp/<workspace slug>/.")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        secret = _bearer(headers)
        user, member = await sync_to_async(_member)(secret, match["slug"])
        if user is None:
            await _answer(
                send,
                401,
                "Send a live Quorum API token as 'Authorization: Bearer <token>'.",
                **{"www-authenticate": 'Bearer realm="quorum"'},
            )
            return
        if not member:
            await _answer(send, 404, "No such workspace.")
            return
        if self._running is None:
            self._running = asyncio.get_running_loop().create_task(self._run_sessions())
        await self._ready.wait()
        # The session's owner: the token's shown prefix and its person (never the secret).
        owner = f"{secret[:10]}:{user.pk}"
        principal = AccessToken(token=owner, client_id=owner, scopes=[])
        scope = {
            **scope,
            "path": "/mcp",
            SLUG_KEY: match["slug"],
            "user": AuthenticatedUser(principal),
        }
        await self.server.session_manager.handle_request(scope, receive, send)
