"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from config.bodylimit import BodyLimitMiddleware, install_daphne_guard  # noqa: E402
from config.requests_at_once import RequestsAtOnce  # noqa: E402
from config.websockets import websocket_urlpatterns  # noqa: E402
from reviews.mcp.http import McpHttpApp  # noqa: E402

# Bodies over a path's cap are refused before they are buffered (config/bodylimit.py).
install_daphne_guard()
# A process runs a few requests at once and queues the rest (config/requests_at_once.py).
django_http = BodyLimitMiddleware(RequestsAtOnce(django_asgi_app, settings.QUORUM_REQUESTS_AT_ONCE))
mcp_http = BodyLimitMiddleware(McpHttpApp())


async def http_app(scope, receive, send):
    """/mcp/… is the MCP server for coding agents (reviews/mcp/http.py); the rest is
    Django."""
    if scope["path"].startswith("/mcp/"):
        await mcp_http(scope, receive, send)
    else:
        await django_http(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
