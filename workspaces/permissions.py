"""The single place that answers "may this user do X in this workspace".

Views, API routes and websocket consumers all go through here. A non-member gets 404, not 403:
the existence of another tenant's workspace is not something to confirm.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404

from guardrails.audit import Actor, audit_record
from workspaces.models import Membership
from workspaces.rules import MIN_ROLE, Perm, agent_role, role_allows


def membership_get(*, user: Any, slug: str) -> Membership:
    """The user's membership in workspace `slug`, with the workspace loaded (one query)."""
    if user is None or not user.is_authenticated:
        raise Http404("No such workspace.")
    try:
        membership = Membership.objects.select_related("workspace").get(
            user=user, workspace__slug=slug
        )
    except Membership.DoesNotExist:
        raise Http404("No such workspace.") from None
    if getattr(user, "quorum_agent", ""):
        # An agent acts with its person's role capped (never saved: the person keeps theirs).
        membership.role = agent_role(membership.role)
        membership.user = user  # so a refusal is audited under the agent's name
    return membership


def allows(membership: Membership | None, perm: Perm) -> bool:
    return membership is not None and role_allows(membership.role, perm)


def require(membership: Membership, perm: Perm, *, attempted: str, request: Any = None) -> None:
    """Raise PermissionDenied unless the role allows `perm`; a refusal is audited."""
    if allows(membership, perm):
        return
    audit_record(
        action="permission.denied",
        actor=Actor.of(membership.user),
        workspace=membership.workspace,
        payload={"attempted": attempted, "role": membership.role, "needs": MIN_ROLE[perm].value},
        request=request,
    )
    needed = MIN_ROLE[perm].value
    raise PermissionDenied(
        f"Your role ({membership.role}) cannot {attempted}: it needs {needed} or above."
    )


def may_create_workspace(user: Any) -> bool:
    """A shared server is closed unless its operator opens it; operators (staff) always may."""
    from django.conf import settings

    return bool(
        getattr(user, "is_authenticated", False)
        and (settings.QUORUM_OPEN_WORKSPACES or user.is_staff)
    )
