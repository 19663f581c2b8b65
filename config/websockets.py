"""Websocket routes, collected from the apps (each app owns its consumers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from channels.consumer import AsyncConsumer
from django.urls import path

from guardrails.consumers import ApprovalsConsumer
from reviews.live.consumers import ReviewSpaceConsumer
from reviews.live.list_consumer import PublishPreviewConsumer, ReviewListConsumer

if TYPE_CHECKING:
    from channels.routing import URLRouter, _ExtendedURLPattern


def _ws(route: str, consumer: type[AsyncConsumer]) -> _ExtendedURLPattern:
    # Channels routes ASGI applications through Django's path(), typed for views by django-stubs.
    pattern = path(route, consumer.as_asgi())  # type: ignore[arg-type]
    return cast("_ExtendedURLPattern", pattern)


websocket_urlpatterns: list[_ExtendedURLPattern | URLRouter] = [
    _ws("ws/reviews/<int:space_id>/", ReviewSpaceConsumer),
    _ws("ws/reviews/list/<slug:slug>/", ReviewListConsumer),
    _ws("ws/reviews/<int:space_id>/publish/", PublishPreviewConsumer),
    _ws("ws/approvals/<slug:slug>/", ApprovalsConsumer),
]
