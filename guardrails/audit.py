"""The one way to write an audit event: appended to its workspace's keyed hash chain."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from guardrails.chain import (
    GENESIS,
    Head,
    canonical_json,
    entry_hash,
    head_is_sealed,
    head_mac,
    key_id,
)
from guardrails.keys import audit_key
from guardrails.models import AuditChainHead, AuditEvent

if TYPE_CHECKING:
    from django.http import HttpRequest

    from workspaces.models import Workspace

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Actor:
    kind: str
    id: int | None
    label: str

    @classmethod
    def of(cls, user: Any) -> Actor:
        if isinstance(user, Actor):  # SYSTEM, passed through services that take a user
            return user
        if user is None or not getattr(user, "is_authenticated", False):
            return cls(AuditEvent.ActorKind.ANONYMOUS, None, "anonymous")
        person = user.email or user.get_username()
        if agent := getattr(user, "quorum_agent", ""):
            # An agent's token acts for its person: both are named, the person is accountable.
            return cls(AuditEvent.ActorKind.USER, user.pk, f"agent {agent} for {person}")
        return cls(AuditEvent.ActorKind.USER, user.pk, person)


SYSTEM = Actor(AuditEvent.ActorKind.SYSTEM, None, "system")
# What Quorum itself does on people's behalf (posting to GitHub): the people are in the payload.
APP = Actor(AuditEvent.ActorKind.APP, None, "quorum (app identity)")


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
    key = audit_key()
    with transaction.atomic():
        AuditChainHead.objects.get_or_create(
            chain=chain,
            defaults={
                "last_hash": GENESIS,
                "mac": head_mac(key, chain=chain, seq=0, last_hash=GENESIS, legacy_seq=0),
            },
        )
        # Serialise writers of this chain: two events can never claim the same predecessor.
        head = AuditChainHead.objects.select_for_update().get(chain=chain)
        sealed = head_is_sealed(_head_of(head), key)
        # Rows beyond the head were not written here (each writer moves both under the lock):
        # the new entry takes the next free number and still chains from the sealed head, so
        # an intruder cannot stop audited writes; the verifier keeps reporting it.
        stored = (
            AuditEvent.objects.filter(chain=chain, seq__gt=head.seq)
            .order_by("-seq")
            .values_list("seq", flat=True)
            .first()
        )
        if stored is not None:
            log.error(
                "audit chain %s: rows up to #%s lie beyond its head #%s", chain, stored, head.seq
            )
        event = AuditEvent(
            chain=chain,
            seq=max(head.seq, stored or 0) + 1,
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
            key_id=key_id(key),
        )
        event.hash = entry_hash(event.prev_hash, event.content(), key)
        event.save()
        head.seq = event.seq
        head.last_hash = event.hash
        if sealed:
            head.mac = head_mac(
                key, chain=chain, seq=head.seq, last_hash=head.last_hash, legacy_seq=head.legacy_seq
            )
        else:
            # Resealing would launder whatever changed the head: it stays unsealed, and
            # verification keeps reporting it, until someone looks.
            log.error(
                "audit chain %s: head row is not sealed by the audit key; left unsealed", chain
            )
            head.mac = ""
        head.save(update_fields=["seq", "last_hash", "mac"])
    return event


def _head_of(row: AuditChainHead) -> Head:
    return Head(row.chain, row.seq, row.last_hash, row.legacy_seq, row.mac)
