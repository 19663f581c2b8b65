"""The audit hash chain as pure functions: hashing, the head's MAC, and verification.

Each entry's hash is HMAC-SHA256(key, previous_hash + canonical JSON of the entry). The key
lives outside the database, so whoever can write the table but does not hold the key cannot
recompute a chain that verifies. Entries written before the chain was keyed carry an empty
`key_id` and were hashed with plain SHA-256; they are accepted only up to the head's
`legacy_seq`, which the head's own MAC covers, so nobody without the key can downgrade newer
entries to plain SHA-256.

The canonical form is sorted-key, compact JSON, so the same entry always hashes the same
whatever wrote it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GENESIS = "0" * 64
UNKEYED = ""  # key_id of the entries hashed with plain SHA-256 before the chain was keyed

# Domain separation: each use of the key MACs a message no other use can produce. Entry
# messages start with a 64-hex-digit hash, these labels do not.
_KEY_ID_LABEL = b"quorum.audit.key-id"
_HEAD_LABEL = "quorum.audit.head\n"
_CHECKPOINT_LABEL = "quorum.audit.verified\n"
SECRET_KEY_DERIVATION_LABEL = b"quorum.audit-chain.v1"


def canonical_json(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def key_from_secret_key(secret_key: str) -> bytes:
    """The chain key derived from Django's SECRET_KEY when no audit key is configured.

    HMAC with a fixed label, so the derived key is useless for anything SECRET_KEY signs
    (sessions, password resets) and knowing it reveals nothing about SECRET_KEY.
    """
    return hmac.new(secret_key.encode(), SECRET_KEY_DERIVATION_LABEL, hashlib.sha256).digest()


def key_id(key: bytes) -> str:
    """A short public fingerprint naming which key wrote an entry; it reveals nothing of it."""
    return hmac.new(key, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]


def legacy_hash(previous_hash: str, entry: Mapping[str, Any]) -> str:
    """The unkeyed hash of the entries written before the chain was keyed."""
    return hashlib.sha256((previous_hash + canonical_json(entry)).encode("utf-8")).hexdigest()


def entry_hash(previous_hash: str, entry: Mapping[str, Any], key: bytes) -> str:
    message = (previous_hash + canonical_json(entry)).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _mac(key: bytes, label: str, fields: Mapping[str, Any]) -> str:
    return hmac.new(key, (label + canonical_json(fields)).encode(), hashlib.sha256).hexdigest()


def head_mac(key: bytes, *, chain: str, seq: int, last_hash: str, legacy_seq: int) -> str:
    """Seals the head row: rewinding it (to hide a deleted tail) or widening the unkeyed
    range takes the key."""
    fields = {"chain": chain, "seq": seq, "last_hash": last_hash, "legacy_seq": legacy_seq}
    return _mac(key, _HEAD_LABEL, fields)


def checkpoint_mac(key: bytes, *, chain: str, seq: int, hash: str) -> str:
    """Seals "entries 1..seq were verified": a forged checkpoint cannot hide older tampering
    from the incremental check."""
    return _mac(key, _CHECKPOINT_LABEL, {"chain": chain, "seq": seq, "hash": hash})


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


@dataclass(frozen=True)
class ChainBreak:
    seq: int
    event_id: int | None  # None when the break is in the head, not in one entry
    reason: str


@dataclass(frozen=True)
class StoredEntry:
    event_id: int
    seq: int
    prev_hash: str
    hash: str
    content: Mapping[str, Any]
    key_id: str = UNKEYED


@dataclass(frozen=True)
class Head:
    chain: str
    seq: int
    last_hash: str
    legacy_seq: int
    mac: str


@dataclass(frozen=True)
class Checkpoint:
    """A verified prefix of a chain: entries 1..seq hold and entry seq's hash is `hash`."""

    seq: int = 0
    hash: str = GENESIS


@dataclass(frozen=True)
class Walk:
    checked: int
    last: Checkpoint
    broken: ChainBreak | None


def head_is_sealed(head: Head, key: bytes) -> bool:
    expected = head_mac(
        key, chain=head.chain, seq=head.seq, last_hash=head.last_hash, legacy_seq=head.legacy_seq
    )
    return _same(head.mac, expected)


def _forged(e: StoredEntry, *, key: bytes, legacy_seq: int, own_id: str) -> str:
    """Why an entry's hash does not hold ("" when it does): altered, recomputed without the
    key, or written by someone who does not have it."""
    if e.key_id == UNKEYED:
        if e.seq > legacy_seq:
            return "unkeyed entry after the chain was keyed (hashes recomputed without the key)"
        if not _same(legacy_hash(e.prev_hash, e.content), e.hash):
            return "content does not match its hash (altered)"
        return ""
    if not _same(entry_hash(e.prev_hash, e.content, key), e.hash):
        reason = "content does not match its hash under the audit key (altered or recomputed)"
        if e.key_id != own_id:
            reason += f"; written under key id {e.key_id}, the configured key is {own_id}"
        return reason
    return ""


def walk(
    entries: Iterable[StoredEntry],
    *,
    key: bytes,
    legacy_seq: int = 0,
    start: Checkpoint = Checkpoint(),
) -> Walk:
    """Walk one chain in sequence order from `start`. The first entry that does not hold is
    the break. An entry whose hash does not hold is also stepped over (its successors may
    chain from the entry before it: the application writes past a row it did not write, see
    guardrails/audit.py), so the walk goes on; any other break ends it. Entries must be
    exactly those after `start.seq`."""
    last, checked, own_id = start, 0, key_id(key)
    first: ChainBreak | None = None
    skipped = 0  # entries stepped over since `last`
    for e in entries:
        expected_seq = last.seq + 1 + skipped
        if e.seq != expected_seq:
            reason = f"sequence gap: expected #{expected_seq} (entries deleted)"
            return Walk(checked, last, first or ChainBreak(e.seq, e.event_id, reason))
        prev_holds = e.prev_hash == last.hash
        forged = _forged(e, key=key, legacy_seq=legacy_seq, own_id=own_id)
        if not prev_holds and not forged:
            reason = "previous hash does not match the entry before"
            return Walk(checked, last, first or ChainBreak(e.seq, e.event_id, reason))
        if forged:
            first = first or ChainBreak(e.seq, e.event_id, forged)
            skipped += 1
            continue
        last, checked, skipped = Checkpoint(e.seq, e.hash), checked + 1, 0
    return Walk(checked, last, first)


def compare_with_head(
    last: Checkpoint, head: Head | None, *, key: bytes, tail_seq: int | None = None
) -> ChainBreak | None:
    """Does the walked chain end where its sealed head says it does?

    `last` is where a clean walk ended; `tail_seq` the highest sequence number stored for the
    chain, read after the walk and before `head` was read again, so a legitimate writer that
    committed meanwhile is covered by `head` (each writer moves head and tail together).
    """
    if head is None:
        if last.seq == 0 and not tail_seq:
            return None
        return ChainBreak(last.seq, None, "the chain has entries but no head row (deleted)")
    if not head_is_sealed(head, key):
        return ChainBreak(
            head.seq, None, "the head row does not carry a valid MAC (altered outside the app)"
        )
    if last.seq < head.seq:
        return ChainBreak(
            last.seq + 1,
            None,
            f"the chain ends at #{last.seq} but its head records #{head.seq} (tail deleted)",
        )
    if last.seq == head.seq and last.hash != head.last_hash:
        return ChainBreak(
            head.seq, None, "the last entry's hash differs from the head's (chain rewritten)"
        )
    beyond = max(last.seq, tail_seq or 0)
    if beyond > head.seq:
        return ChainBreak(
            head.seq + 1,
            None,
            f"entries up to #{beyond} lie beyond the head #{head.seq} (appended outside the app)",
        )
    return None


def verify(
    entries: Iterable[StoredEntry],
    *,
    key: bytes,
    head: Head | None,
    start: Checkpoint = Checkpoint(),
    tail_seq: int | None = None,
) -> Walk:
    """Walk from `start` up to the head and compare the end with the head.

    Only `head` entries are expected: the caller passes entries with start.seq < seq <= head.seq
    (or every entry when there is no head) and reports anything beyond through `tail_seq`.
    """
    legacy_seq = head.legacy_seq if head is not None else 0
    result = walk(entries, key=key, legacy_seq=legacy_seq, start=start)
    if result.broken is not None:
        return result
    return Walk(
        result.checked,
        result.last,
        compare_with_head(result.last, head, key=key, tail_seq=tail_seq),
    )
