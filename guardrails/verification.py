"""Verifying the audit chains against their sealed heads: fully, or from the last checkpoint.

The full walk (`audit_verify`) reads every entry; the audit page walks only the entries written
since the last verified checkpoint, so its cost does not grow with the trail. A full walk that
finds a break drops the checkpoint, so the page shows the break too.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from dataclasses import dataclass

from django.utils import timezone

from guardrails.chain import (
    ChainBreak,
    Checkpoint,
    Head,
    StoredEntry,
    checkpoint_mac,
    compare_with_head,
    walk,
)
from guardrails.keys import audit_key
from guardrails.models import AuditChainHead, AuditEvent, AuditVerification


@dataclass(frozen=True)
class ChainStatus:
    chain: str
    checked: int  # entries read by this verification
    verified_seq: int  # entries 1..verified_seq hold (when not broken)
    broken: ChainBreak | None
    incremental: bool  # started from a checkpoint rather than entry 1


def _head(chain: str) -> Head | None:
    row = AuditChainHead.objects.filter(chain=chain).first()
    if row is None:
        return None
    return Head(row.chain, row.seq, row.last_hash, row.legacy_seq, row.mac)


def _entries(chain: str, *, after: int, upto: int | None) -> Iterator[StoredEntry]:
    rows = AuditEvent.objects.filter(chain=chain, seq__gt=after)
    if upto is not None:
        rows = rows.filter(seq__lte=upto)
    for e in rows.order_by("seq").iterator(chunk_size=2000):
        yield StoredEntry(e.pk, e.seq, e.prev_hash, e.hash, e.content(), e.key_id)


def _tail_beyond_head(chain: str) -> int | None:
    """The highest stored seq if it lies beyond the head as it stands now, else None.

    Read after the walk, and the head after that: a writer commits its entry and its head
    together, so an entry visible here has its head visible to the next read.
    """
    tail = (
        AuditEvent.objects.filter(chain=chain)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    now = AuditChainHead.objects.filter(chain=chain).values_list("seq", flat=True).first()
    if tail is None or (now is not None and tail <= now):
        return None
    return tail


def _checkpoint(chain: str, key: bytes, head: Head | None) -> Checkpoint:
    row = AuditVerification.objects.filter(chain=chain).first()
    if row is None or head is None or row.seq > head.seq:
        return Checkpoint()
    if not hmac.compare_digest(
        row.mac, checkpoint_mac(key, chain=chain, seq=row.seq, hash=row.hash)
    ):
        return Checkpoint()  # not ours: start from entry 1
    return Checkpoint(row.seq, row.hash)


def _checkpoint_save(chain: str, key: bytes, last: Checkpoint) -> None:
    values = {
        "seq": last.seq,
        "hash": last.hash,
        "mac": checkpoint_mac(key, chain=chain, seq=last.seq, hash=last.hash),
        "verified_at": timezone.now(),
    }
    # Never move a checkpoint backwards: a slower verifier may finish after a faster one.
    if not AuditVerification.objects.filter(chain=chain, seq__lte=last.seq).update(**values):
        AuditVerification.objects.get_or_create(chain=chain, defaults=values)


def chain_verify(*, chain: str, incremental: bool = False) -> ChainStatus:
    """Verify one chain against its head in constant memory.

    incremental: start from the last sealed checkpoint (the audit page); otherwise walk from
    entry 1 (`audit_verify`). Either way a clean result advances the checkpoint.
    """
    key = audit_key()
    head = _head(chain)
    start = _checkpoint(chain, key, head) if incremental else Checkpoint()
    entries = _entries(chain, after=start.seq, upto=head.seq if head else None)
    legacy_seq = head.legacy_seq if head else 0
    result = walk(entries, key=key, legacy_seq=legacy_seq, start=start)
    broken = result.broken
    if broken is None:
        # The tail is read only now, after the walk (see _tail_beyond_head).
        beyond = _tail_beyond_head(chain)
        broken = compare_with_head(result.last, head, key=key, tail_seq=beyond)
    if broken is None and result.last.seq:
        _checkpoint_save(chain, key, result.last)
    elif not incremental:
        AuditVerification.objects.filter(chain=chain).delete()
    return ChainStatus(chain, result.checked, result.last.seq, broken, start.seq > 0)
