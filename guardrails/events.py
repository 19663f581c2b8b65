"""Live notifications for approval requests: the inbox group, and the review's own page."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)


def approvals_group(workspace_id: int) -> str:
    return f"approvals-{workspace_id}"


def approvals_emit(request, kind: str) -> None:
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
    # The review's own page goes through reviews.live.events, which versions its live state.
    from reviews.live.events import space_send

    if request.target_type == "reviewspace":
        space_send(int(request.target_id), "review.published", request=request.pk, kind=kind)
    if request.target_type == "reviewerticket":
        # An issue request moved: the ticket on its review page says where it is now.
        from reviews.models import ReviewerTicket

        space_id = (
            ReviewerTicket.objects.filter(pk=int(request.target_id))
            .values_list("round__space_id", flat=True)
            .first()
        )
        if space_id is not None:
            space_send(space_id, "review.ticket", request=request.pk, kind=kind)
