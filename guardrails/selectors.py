from __future__ import annotations

from guardrails.models import AuditChainHead, AuditEvent


def audit_chains() -> list[str]:
    """Every chain that has entries or a head: a chain whose head row was deleted still counts,
    and so does a head whose entries were all deleted."""
    with_entries = AuditEvent.objects.values_list("chain", flat=True).distinct()
    with_head = AuditChainHead.objects.values_list("chain", flat=True)
    return sorted(set(with_entries) | set(with_head))
