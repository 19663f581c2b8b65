from __future__ import annotations

from django.http import HttpRequest

from workspaces.models import Workspace


def navigation(request: HttpRequest) -> dict:
    """Workspaces for the switcher; lazy so pages that do not show it pay no query."""

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_workspaces": []}
    return {
        "nav_workspaces": Workspace.objects.filter(memberships__user=user)
        .order_by("name")
        .only("name", "slug")
    }
