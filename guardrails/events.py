"""Live notifications for approval requests: the inbox group, and what other apps are told.

Guardrails does not know the pages its requests are about (a review, a ticket on it): the app
that owns them registers listeners at start-up, in its AppConfig.ready. `on_status_moved`
listeners hear that a request's status moved; `on_live_change` listeners hear every change the
inbox shows live (a status move, or approvers told), to update their own pages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from guardrails.models import ApprovalRequest

log = logging.getLogger(__name__)

#: Told, after commit, that a request's status moved (before the inbox is told).
StatusListener = Callable[[ApprovalRequest], None]
#: Told, after commit, of a change the inbox shows: (request, kind of change).
LiveListener = Callable[[ApprovalRequest, str], None]

_status_listeners: list[StatusListener] = []
_live_listeners: list[LiveListener] = []


def on_status_moved(listener: StatusListener) -> None:
    if listener not in _status_listeners:
        _status_listeners.append(listener)


def on_live_change(listener: LiveListener) -> None:
    if listener not in _live_listeners:
        _live_listeners.append(listener)


def approvals_group(workspace_id: int) -> str:
    return f"approvals-{workspace_id}"


def approval_status_moved(request: ApprovalRequest, kind: str) -> None:
    """Called after commit when a request's status moved: the listeners, then the inbox."""
    for listener in _status_listeners:
        listener(request)
    approvals_emit(request, kind)


def approvals_emit(request: ApprovalRequest, kind: str) -> None:
    """Called after commit. A lost notification never undoes a decision."""
    layer = get_channel_layer()
    if layer is None:
        return
    group = approvals_group(request.workspace_id)
    try:
        message = {"type": "approvals.changed", "request": request.pk, "kind": kind}
        async_to_sync(layer.group_send)(group, message)
    except Exception:
        log.exception("could not notify %s", group)
    for listener in _live_listeners:
        listener(request, kind)
