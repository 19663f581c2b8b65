"""Websocket routes, collected from the apps (each app owns its consumers)."""

from __future__ import annotations

websocket_urlpatterns: list = []
