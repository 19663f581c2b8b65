"""Request bodies are capped before they are buffered (docs/security.md#request-body-caps).

Three layers share one pure rule, `body_cap(path)`:

- daphne (our server) reads a whole request body into a temporary file and then hands it to
  the application as in-memory messages, all at once, before the application runs: a 200 MB
  webhook cost the web process ~155 MB although Django refused it. No ASGI middleware can stop
  that, so `install_daphne_guard` gives daphne a request class that answers 413 as soon as the
  declared or received length passes the cap and keeps nothing of the body.
- `BodyLimitMiddleware` is the same rule as ASGI middleware, for any other ASGI server (they
  stream the body): 413 on Content-Length, and for chunked bodies as soon as the count of
  received bytes passes the cap, without reading further.
- `body_limit_middleware` is the Django middleware for the test client and WSGI.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from django.http import HttpResponse

WEBHOOK_PREFIX = "/webhooks/"
API_PREFIX = "/api/"
MCP_PREFIX = "/mcp/"
# JSON-RPC's "invalid request": an MCP client reads the refusal as an error of its call.
JSONRPC_INVALID_REQUEST = -32600
# After a 413 the client may still be sending. Closing at once with unread data makes the
# kernel reset the connection, and a reset can destroy the 413 before the client reads it; so
# the rest is read and thrown away for this long, then the connection is closed.
LINGER_SECONDS = 2.0


@dataclass(frozen=True)
class BodyCaps:
    webhook: int
    api: int
    form: int
    mcp: int = 1024 * 1024

    @classmethod
    def from_settings(cls) -> BodyCaps:
        from django.conf import settings

        return cls(
            webhook=settings.QUORUM_MAX_WEBHOOK_BODY,
            api=settings.QUORUM_MAX_API_BODY,
            form=settings.QUORUM_MAX_FORM_BODY,
            mcp=settings.QUORUM_MAX_MCP_BODY,
        )


def body_cap(path: str, caps: BodyCaps) -> int:
    """The largest body, in bytes, a request to PATH may carry."""
    if path.startswith(WEBHOOK_PREFIX):
        return caps.webhook
    if path.startswith(API_PREFIX):
        return caps.api
    if path.startswith(MCP_PREFIX):
        return caps.mcp
    return caps.form


def declared_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    """The Content-Length of ASGI headers; None when absent or not a plain number."""
    for name, value in headers:
        if name.lower() == b"content-length":
            text = value.strip()
            return int(text) if text.isdigit() else None
    return None


def refusal_body(cap: int, path: str = "") -> bytes:
    """JSON like every other API error ({"detail": ...}); readable as text in a browser too.
    Under /mcp/ a JSON-RPC error, which MCP clients show as the failed call's error."""
    detail = f"Request body too large: at most {cap} bytes are accepted here."
    if path.startswith(MCP_PREFIX):
        error = {"code": JSONRPC_INVALID_REQUEST, "message": detail}
        return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode() + b"\n"
    return json.dumps({"detail": detail}).encode() + b"\n"


class _BodyTooLarge(Exception):
    pass


Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class BodyLimitMiddleware:
    """ASGI middleware: 413 before the application buffers a body larger than its path's cap."""

    def __init__(self, app, caps: BodyCaps | None = None):
        self.app = app
        self.caps = caps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = body_cap(scope["path"], self.caps or BodyCaps.from_settings())
        length = declared_length(scope.get("headers", ()))
        if length is not None and length > cap:
            await _send_413(send, cap, scope["path"])
            return
        received = 0
        started = False

        async def counted_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    raise _BodyTooLarge
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _BodyTooLarge:
            if not started:
                await _send_413(send, cap, scope["path"])


async def _send_413(send: Send, cap: int, path: str) -> None:
    body = refusal_body(cap, path)
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def body_limit_middleware(get_response):
    """Django middleware: the same caps by Content-Length for the test client and WSGI."""

    def middleware(request):
        cap = body_cap(request.path_info, BodyCaps.from_settings())
        raw = request.META.get("CONTENT_LENGTH", "")
        if raw.strip().isdigit() and int(raw) > cap:
            return HttpResponse(
                refusal_body(cap, request.path_info), status=413, content_type="application/json"
            )
        return get_response(request)

    return middleware


_installed = False


def install_daphne_guard() -> None:
    """Make daphne refuse over-long bodies while they arrive, keeping nothing of them."""
    global _installed
    if _installed:
        return
    from daphne import http_protocol
    from twisted.internet import reactor

    class CappedWebRequest(http_protocol.WebRequest):
        _refused = False
        _seen = 0
        _cap: int | None = None
        _path = ""

        def gotLength(self, length):
            # The request line is parsed by now; Twisted keeps the path on the channel.
            raw_path = getattr(self.channel, "_path", b"") or b""
            path = raw_path.split(b"?", 1)[0].decode("latin-1")
            self._path = path
            self._cap = body_cap(path, BodyCaps.from_settings())
            if length is not None and length > self._cap:
                self.content = None
                self._refuse()
                return
            super().gotLength(length)

        def handleContentChunk(self, data):
            if self._refused:
                return
            self._seen += len(data)
            if self._cap is not None and self._seen > self._cap:
                self._refuse()
                return
            super().handleContentChunk(data)

        def requestReceived(self, command, path, version):
            # Called once the whole body has arrived; a refused request is neither parsed nor
            # handed to the application.
            if self._refused:
                return None
            return super().requestReceived(command, path, version)

        def _refuse(self) -> None:
            self._refused = True
            if self.content is not None:
                self.content.close()
            self.content = BytesIO()
            # No "100 Continue" after the answer: Twisted sends one only if this header is there.
            self.requestHeaders.removeHeader(b"expect")
            body = refusal_body(self._cap or 0, self._path)
            head = (
                "HTTP/1.1 413 Content Too Large\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            transport = self.channel.transport
            transport.write(head + body)
            # Twisted declares interface methods without `self`, which mypy cannot bind.
            reactor.callLater(LINGER_SECONDS, transport.loseConnection)  # type: ignore[arg-type]

    http_protocol.WebRequest = CappedWebRequest
    _installed = True
