"""Which approvers have the approvals inbox open right now."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from guardrails.models import ApproverPresence
from workspaces.models import Membership
from workspaces.rules import Perm, role_allows

#: A socket refreshes its row every PRESENCE_HEARTBEAT seconds; older rows are ignored.
PRESENCE_HEARTBEAT = 20
PRESENCE_EXPIRY = timedelta(seconds=60)


def presence_touch(*, channel_name: str, workspace_id: int, user_id: int) -> None:
    ApproverPresence.objects.update_or_create(
        channel_name=channel_name,
        defaults={"workspace_id": workspace_id, "user_id": user_id, "last_seen": timezone.now()},
    )


def presence_leave(*, channel_name: str) -> None:
    ApproverPresence.objects.filter(channel_name=channel_name).delete()


def present_approvers(*, workspace_id: int, exclude_user_id: int | None = None) -> list[int]:
    """Users present in the inbox who may approve now (role checked at this moment)."""
    since = timezone.now() - PRESENCE_EXPIRY
    users = set(
        ApproverPresence.objects.filter(
            workspace_id=workspace_id, last_seen__gte=since
        ).values_list("user_id", flat=True)
    )
    users.discard(exclude_user_id)
    roles = Membership.objects.filter(workspace_id=workspace_id, user_id__in=users).values_list(
        "user_id", "role"
    )
    return sorted(uid for uid, role in roles if role_allows(role, Perm.DECIDE_APPROVAL))
