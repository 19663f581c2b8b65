"""Websocket routes, collected from the apps (each app owns its consumers)."""

from __future__ import annotations

from django.urls import path

from guardrails.consumers import ApprovalsConsumer
from reviews.consumers import ReviewSpaceConsumer
from reviews.list_consumer import PublishPreviewConsumer, ReviewListConsumer

websocket_urlpatterns: list = [
    path("ws/reviews/<int:space_id>/", ReviewSpaceConsumer.as_asgi()),
    path("ws/reviews/list/<slug:slug>/", ReviewListConsumer.as_asgi()),
    path("ws/reviews/<int:space_id>/publish/", PublishPreviewConsumer.as_asgi()),
    path("ws/approvals/<slug:slug>/", ApprovalsConsumer.as_asgi()),
]
