"""The workspaces app's pages, by what they serve (account, workspace_settings, members,
reviewers, repositories). `member_view` is here because every member page, in every app,
is reached through it."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest

from workspaces.models import Membership
from workspaces.permissions import membership_get


def member_view(view):
    """Login required, then resolve the caller's membership of the workspace in the URL."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args, **kwargs):
        membership = membership_get(user=request.user, slug=slug)
        return view(request, membership, *args, **kwargs)

    return wrapper


def member_context(membership: Membership, **extra) -> dict:
    """What every member page shows: the workspace and the person's membership."""
    return {"workspace": membership.workspace, "membership": membership, **extra}
