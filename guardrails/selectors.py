from __future__ import annotations

from datetime import date, datetime, time
from typing import TYPE_CHECKING

from django.db.models import Q, QuerySet
from django.utils import timezone

from guardrails.models import AuditChainHead, AuditEvent

if TYPE_CHECKING:
    from workspaces.models import Workspace


def audit_chains() -> list[str]:
    """Every chain that has entries or a head: a chain whose head row was deleted still counts,
    and so does a head whose entries were all deleted."""
    with_entries = AuditEvent.objects.values_list("chain", flat=True).distinct()
    with_head = AuditChainHead.objects.values_list("chain", flat=True)
    return sorted(set(with_entries) | set(with_head))


def audit_events(
    *,
    workspace: Workspace,
    action: str = "",
    actor: str = "",
    target: str = "",
    since: date | None = None,
    until: date | None = None,
) -> QuerySet[AuditEvent]:
    """A workspace's audit trail, newest first, filtered the same way on the page, its exports
    and the API. Every filter is optional; given together, an event must match all of them:

    - `action`: the action starts with it (`approval.` finds every approval event), or with
      one of several, comma-separated (`prPublish.executed,issueCreate.executed`);
    - `actor`: the actor's label contains it, any case (an email or part of one);
    - `target`: the target's id is exactly it, or its label contains it, any case;
    - `since` / `until`: the event happened on or after / on or before that day (the server's
      time zone), both days included.
    """
    events = AuditEvent.objects.filter(workspace=workspace)
    if prefixes := [a.strip() for a in action.split(",") if a.strip()]:
        matches = Q()
        for prefix in prefixes:
            matches |= Q(action__startswith=prefix)
        events = events.filter(matches)
    if actor:
        events = events.filter(actor_label__icontains=actor)
    if target:
        events = events.filter(Q(target_id=target) | Q(target_label__icontains=target))
    if since is not None:
        events = events.filter(
            created_at__gte=timezone.make_aware(datetime.combine(since, time.min))
        )
    if until is not None:
        events = events.filter(
            created_at__lte=timezone.make_aware(datetime.combine(until, time.max))
        )
    return events.order_by("-seq")
