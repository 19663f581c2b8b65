"""Progress events for the live guided review, sent to the space's channel group after commit."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)


def space_group(space_id: int) -> str:
    return f"review-space-{space_id}"


def list_group(workspace_id: int) -> str:
    return f"review-list-{workspace_id}"


def emit_list_row(workspace_id: int, space_id: int) -> None:
    """The reviews list of the workspace re-renders this space's row (its verdict moved)."""
    _send_on_commit(list_group(workspace_id), "reviews.row", space_id=space_id)


def emit(space_id: int, event_type: str, **data: Any) -> None:
    """Queue `event_type` for the space's group once the current transaction commits."""
    _send_on_commit(space_group(space_id), event_type, **data)


def _send_on_commit(group: str, event_type: str, **data: Any) -> None:

    # One id per event lets every socket of a process share the render of the same update.
    message = {"type": event_type, "event_id": uuid.uuid4().hex, **data}

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(group, message)
        except Exception:  # a dropped live update must never undo or fail a committed change
            log.exception("could not send %s to %s", event_type, group)

    transaction.on_commit(send)
