"""The audit hash chain as pure functions (DESIGN.md §3.12).

hash = sha256(previous_hash + canonical JSON of the entry). The canonical form is sorted-key,
compact JSON, so the same entry always hashes the same whatever wrote it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GENESIS = "0" * 64


def canonical_json(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def entry_hash(previous_hash: str, entry: Mapping[str, Any]) -> str:
    return hashlib.sha256((previous_hash + canonical_json(entry)).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChainBreak:
    seq: int
    event_id: int
    reason: str


@dataclass(frozen=True)
class StoredEntry:
    event_id: int
    seq: int
    prev_hash: str
    hash: str
    content: Mapping[str, Any]


def verify(entries: Iterable[StoredEntry]) -> ChainBreak | None:
    """Walk one chain in sequence order; return the first entry that does not hold."""
    expected_prev = GENESIS
    expected_seq = 1
    for e in entries:
        if e.seq != expected_seq:
            return ChainBreak(e.seq, e.event_id, f"sequence gap: expected {expected_seq}")
        if e.prev_hash != expected_prev:
            return ChainBreak(e.seq, e.event_id, "previous hash does not match the entry before")
        if entry_hash(e.prev_hash, e.content) != e.hash:
            return ChainBreak(e.seq, e.event_id, "content does not match its hash (altered)")
        expected_prev = e.hash
        expected_seq += 1
    return None
