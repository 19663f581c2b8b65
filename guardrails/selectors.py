from __future__ import annotations

from collections.abc import Iterator

from guardrails.chain import ChainBreak, StoredEntry, verify
from guardrails.models import AuditEvent


def _stored(chain: str) -> Iterator[StoredEntry]:
    rows = AuditEvent.objects.filter(chain=chain).order_by("seq")
    for event in rows.iterator(chunk_size=2000):
        yield StoredEntry(event.pk, event.seq, event.prev_hash, event.hash, event.content())


def audit_chain_verify(*, chain: str) -> tuple[int, ChainBreak | None]:
    """Verify one chain in constant memory; return (entries checked, first break or None)."""
    count = 0

    def counted() -> Iterator[StoredEntry]:
        nonlocal count
        for entry in _stored(chain):
            count += 1
            yield entry

    broken = verify(counted())
    return count, broken


def audit_chains() -> list[str]:
    return list(AuditEvent.objects.values_list("chain", flat=True).distinct().order_by("chain"))
