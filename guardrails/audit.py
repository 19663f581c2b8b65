"""The one way to write an audit event (DESIGN.md §3.12)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from guardrails.chain import GENESIS, canonical_json, entry_hash
from guardrails.models import AuditChainHead, AuditEvent

if TYPE_CHECKING:
    from django.http import HttpRequest

    from workspaces.models import Workspace


@dataclass(frozen=True)
class Actor:
    kind: str
    id: int | None
    label: str

    @classmethod
    def of(cls, user: Any) -> Actor:
        if user is None or not getattr(user, "is_authenticated", False):
            return cls(AuditEvent.ActorKind.ANONYMOUS, None, "anonymous")
        return cls(AuditEvent.ActorKind.USER, user.pk, user.email or user.get_username())


SYSTEM = Actor(AuditEvent.ActorKind.SYSTEM, None, "system")


@dataclass(frozen=True)
class Target:
    type: str
    id: str
    label: str = ""

    @classmethod
    def of(cls, obj: Any, label: str | None = None) -> Target:
        return cls(obj._meta.model_name, str(obj.pk), label if label is not None else str(obj))


def chain_name(workspace: Workspace | None) -> str:
    return f"ws:{workspace.pk}" if workspace is not None else "global"


def _request_meta(request: HttpRequest | None) -> tuple[str | None, str]:
    if request is None:
        return None, ""
    # REMOTE_ADDR only: X-Forwarded-For is client-controlled unless a trusted proxy rewrites it.
    return request.META.get("REMOTE_ADDR") or None, request.META.get("HTTP_USER_AGENT", "")[:300]


def audit_record(
    *,
    action: str,
    actor: Actor,
    workspace: Workspace | None = None,
    target: Target | None = None,
    payload: dict[str, Any] | None = None,
    request: HttpRequest | None = None,
) -> AuditEvent:
    """Append one event to its workspace's chain. Joins the caller's transaction if any."""
    ip, user_agent = _request_meta(request)
    # Round-trip through JSON so what is hashed now is exactly what the database returns later.
    clean_payload = json.loads(canonical_json(payload or {}))
    chain = chain_name(workspace)
    with transaction.atomic():
        AuditChainHead.objects.get_or_create(chain=chain, defaults={"last_hash": GENESIS})
        # Serialise writers of this chain: two events can never claim the same predecessor.
        head = AuditChainHead.objects.select_for_update().get(chain=chain)
        event = AuditEvent(
            chain=chain,
            seq=head.seq + 1,
            workspace=workspace,
            actor_kind=actor.kind,
            actor_id=actor.id,
            actor_label=actor.label[:254],
            action=action,
            target_type=target.type if target else "",
            target_id=target.id if target else "",
            target_label=(target.label if target else "")[:300],
            payload=clean_payload,
            created_at=timezone.now(),
            ip=ip,
            user_agent=user_agent,
            prev_hash=head.last_hash,
        )
        event.hash = entry_hash(event.prev_hash, event.content())
        event.save()
        head.seq = event.seq
        head.last_hash = event.hash
        head.save(update_fields=["seq", "last_hash"])
    return event
