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


def emit(space_id: int, event_type: str, **data: Any) -> None:
    """Queue `event_type` for the space's group once the current transaction commits."""

    # One id per event lets every socket of a process share the render of the same update.
    message = {"type": event_type, "event_id": uuid.uuid4().hex, **data}

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(space_group(space_id), message)
        except Exception:  # a dropped live update must never undo or fail a committed change
            log.exception("could not send %s for space %s", event_type, space_id)

    transaction.on_commit(send)
