"""Links to deleted objects (audit rows, bookmarks) explain what was there instead of 404."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from workspaces.models import Membership, Tombstone

KIND_LABELS = {"reviewspace": "review", "repository": "repository"}


def tombstone_or_404(
    request: HttpRequest, membership: Membership, *, kind: str, object_id
) -> HttpResponse:
    """410 Gone with what the object was, when and by whom it was deleted; 404 when nothing
    is known of it. Only the caller's own workspace is searched (membership already checked)."""
    stone = (
        Tombstone.objects.filter(
            workspace=membership.workspace, kind=kind, object_id=str(object_id)
        )
        .select_related("deleted_by")
        .first()
    )
    if stone is None:
        raise Http404("Nothing here.")
    context = {
        "workspace": membership.workspace,
        "membership": membership,
        "stone": stone,
        "kind_label": KIND_LABELS.get(stone.kind, stone.kind),
        "counts": [(k.replace("_", " "), v) for k, v in (stone.counts or {}).items()],
    }
    return render(request, "workspaces/tombstone.html", context, status=410)
