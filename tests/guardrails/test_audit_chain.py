"""The audit trail is append-only and hash-chained per workspace under a key outside the
database; its head row is sealed with the same key."""

from __future__ import annotations

import hashlib
import itertools
import threading

import pytest
from django.db import DatabaseError, connection, connections, transaction
from hypothesis import given
from hypothesis import strategies as st

from guardrails.audit import SYSTEM, Actor, audit_record
from guardrails.chain import (
    GENESIS,
    UNKEYED,
    Checkpoint,
    Head,
    StoredEntry,
    entry_hash,
    head_mac,
    key_from_secret_key,
    key_id,
    legacy_hash,
    verify,
)
from guardrails.keys import audit_key
from guardrails.models import AppendOnlyError, AuditChainHead, AuditEvent
from guardrails.verification import chain_verify
from tests.fixtures import AUDIT_TRUNCATE_TRIGGER

KEY = b"k" * 32
OTHER_KEY = b"o" * 32
CHAIN = "ws:1"


def build(
    payloads: list[dict], *, key: bytes = KEY, legacy: int = 0
) -> tuple[list[StoredEntry], Head]:
    """A chain whose first `legacy` entries are plain SHA-256, the rest keyed, and its head."""
    entries, prev = [], GENESIS
    for seq, payload in enumerate(payloads, start=1):
        content = {"seq": seq, "payload": payload}
        if seq <= legacy:
            digest, kid = legacy_hash(prev, content), UNKEYED
        else:
            digest, kid = entry_hash(prev, content, key), key_id(key)
        entries.append(StoredEntry(seq, seq, prev, digest, content, kid))
        prev = digest
    seq = len(entries)
    mac = head_mac(key, chain=CHAIN, seq=seq, last_hash=prev, legacy_seq=legacy)
    return entries, Head(CHAIN, seq, prev, legacy, mac)


def rekeyed(entries: list[StoredEntry], key: bytes | None) -> list[StoredEntry]:
    """The chain recomputed from entry 1 by someone holding `key` (None: plain SHA-256)."""
    out, prev = [], GENESIS
    for e in entries:
        if key is None:
            digest, kid = legacy_hash(prev, e.content), UNKEYED
        else:
            digest, kid = entry_hash(prev, e.content, key), key_id(key)
        out.append(StoredEntry(e.event_id, e.seq, prev, digest, e.content, kid))
        prev = digest
    return out


payload_lists = st.lists(
    st.dictionaries(st.text(max_size=5), st.integers()), min_size=1, max_size=12
)


@given(payloads=payload_lists, data=st.data())
def test_it_detects_any_altered_entry_at_exactly_that_entry(payloads, data):
    entries, head = build(payloads)
    assert verify(entries, key=KEY, head=head).broken is None
    index = data.draw(st.integers(0, len(entries) - 1))
    victim = entries[index]
    altered = StoredEntry(
        victim.event_id,
        victim.seq,
        victim.prev_hash,
        victim.hash,
        {**victim.content, "payload": {"tampered": True}},
        victim.key_id,
    )
    broken = verify([*entries[:index], altered, *entries[index + 1 :]], key=KEY, head=head).broken
    assert broken is not None and broken.seq == victim.seq and broken.event_id == victim.event_id


@given(payloads=payload_lists, legacy=st.integers(0, 12))
def test_a_chain_recomputed_without_the_key_does_not_verify(payloads, legacy):
    entries, head = build(payloads, legacy=min(legacy, len(payloads)))
    for forged_with in (OTHER_KEY, None):
        forged = rekeyed(entries, forged_with)
        # Even with a head that matches the forged chain, sealed with the wrong key.
        forged_head = Head(
            CHAIN,
            head.seq,
            forged[-1].hash,
            head.legacy_seq,
            head_mac(
                OTHER_KEY,
                chain=CHAIN,
                seq=head.seq,
                last_hash=forged[-1].hash,
                legacy_seq=head.legacy_seq,
            ),
        )
        for claimed_head in (head, forged_head):
            result = verify(forged, key=KEY, head=claimed_head)
            if forged_with is None and head.legacy_seq == head.seq and claimed_head is head:
                # An entirely pre-key chain recomputed as plain SHA-256 ends on the same hashes
                # it had: nothing changed, nothing to detect.
                assert result.broken is None
            else:
                assert result.broken is not None


@given(payloads=payload_lists, data=st.data())
def test_a_deleted_tail_is_reported_unless_the_head_is_rewound_with_the_key(payloads, data):
    entries, head = build(payloads)
    keep = data.draw(st.integers(0, len(entries) - 1))
    kept = entries[:keep]
    broken = verify(kept, key=KEY, head=head).broken
    assert broken is not None and broken.event_id is None and "tail deleted" in broken.reason

    last = kept[-1].hash if kept else GENESIS
    rewound_without_key = Head(CHAIN, keep, last, 0, head.mac)
    broken = verify(kept, key=KEY, head=rewound_without_key).broken
    assert broken is not None and "MAC" in broken.reason

    # The documented limit: whoever holds the key can seal a rewound head.
    mac = head_mac(KEY, chain=CHAIN, seq=keep, last_hash=last, legacy_seq=0)
    assert verify(kept, key=KEY, head=Head(CHAIN, keep, last, 0, mac)).broken is None


@given(payloads=payload_lists, data=st.data())
def test_a_deleted_middle_entry_is_a_sequence_gap(payloads, data):
    entries, head = build([*payloads, {"last": 1}])
    index = data.draw(st.integers(0, len(entries) - 2))
    broken = verify([*entries[:index], *entries[index + 1 :]], key=KEY, head=head).broken
    assert broken is not None and broken.seq == index + 2 and "gap" in broken.reason


@given(payloads=payload_lists, data=st.data())
def test_keyed_entries_cannot_be_downgraded_to_plain_sha256(payloads, data):
    legacy = data.draw(st.integers(0, len(payloads) - 1))
    entries, head = build(payloads, legacy=legacy)
    assert verify(entries, key=KEY, head=head).broken is None
    downgraded = rekeyed(entries, None)
    last = downgraded[-1].hash
    # Widening the unkeyed range on the head needs the key too.
    for widened in (head.legacy_seq, head.seq):
        forged_head = Head(CHAIN, head.seq, last, widened, head.mac)
        broken = verify(downgraded, key=KEY, head=forged_head).broken
        assert broken is not None


@given(payloads=payload_lists, data=st.data())
def test_from_a_checkpoint_only_newer_entries_are_read(payloads, data):
    entries, head = build(payloads)
    at = data.draw(st.integers(0, len(entries)))
    start = Checkpoint(at, entries[at - 1].hash if at else GENESIS)
    result = verify(entries[at:], key=KEY, head=head, start=start)
    assert result.broken is None and result.checked == len(entries) - at
    assert result.last == Checkpoint(head.seq, head.last_hash)


def test_entries_beyond_the_head_are_reported():
    entries, head = build([{"a": 1}, {"b": 2}])
    broken = verify(entries[:2], key=KEY, head=head, tail_seq=3).broken
    assert broken is not None and "beyond the head" in broken.reason


def test_a_chain_without_its_head_row_is_reported():
    entries, _ = build([{"a": 1}])
    broken = verify(entries, key=KEY, head=None).broken
    assert broken is not None and "no head row" in broken.reason
    assert verify([], key=KEY, head=None).broken is None


def test_the_derived_key_is_separated_from_secret_key():
    derived = key_from_secret_key("s3cret")
    assert derived == key_from_secret_key("s3cret") != key_from_secret_key("s3cret2")
    assert derived not in (b"s3cret", hashlib.sha256(b"s3cret").digest())
    assert len(key_id(derived)) == 16 and key_id(derived) != key_id(KEY)


def test_the_configured_key_wins_over_the_derived_one(settings):
    settings.QUORUM_AUDIT_KEY = ""
    assert audit_key() == key_from_secret_key(settings.SECRET_KEY)
    settings.QUORUM_AUDIT_KEY = "x" * 40
    assert audit_key() == b"x" * 40


# -- on the database -----------------------------------------------------------------------


def test_it_chains_keyed_events_per_workspace(workspace_factory):
    ws1, ws2 = workspace_factory(), workspace_factory()
    for i in range(3):
        audit_record(action="test.event", actor=SYSTEM, workspace=ws1, payload={"i": i})
    audit_record(action="test.event", actor=SYSTEM, workspace=ws2, payload={})
    first = list(AuditEvent.objects.filter(workspace=ws1).order_by("seq"))
    # workspace.created is entry 1 of each chain.
    assert [e.seq for e in first] == [1, 2, 3, 4]
    assert first[0].prev_hash == GENESIS
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(first))
    assert {e.key_id for e in first} == {key_id(audit_key())}
    assert first[1].hash == entry_hash(first[1].prev_hash, first[1].content(), audit_key())
    head = AuditChainHead.objects.get(chain=f"ws:{ws1.pk}")
    assert (head.seq, head.last_hash, head.legacy_seq) == (4, first[-1].hash, 0)
    assert head.mac == head_mac(
        audit_key(), chain=head.chain, seq=4, last_hash=head.last_hash, legacy_seq=0
    )
    assert AuditEvent.objects.filter(workspace=ws2).count() == 2
    status = chain_verify(chain=f"ws:{ws1.pk}")
    assert (status.checked, status.broken) == (4, None)


def test_it_refuses_changes_through_the_orm(workspace):
    event = AuditEvent.objects.filter(workspace=workspace).first()
    event.action = "changed"
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.filter(pk=event.pk).update(action="x")
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.all().delete()


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE guardrails_auditevent SET action = 'x'",
        "DELETE FROM guardrails_auditevent",
        "TRUNCATE guardrails_auditevent",
    ],
)
def test_it_is_refused_by_postgresql_itself(workspace, sql):
    with (
        connection.cursor() as cursor,
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
    ):
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        # The suite disables the TRUNCATE trigger for its own flushes; put production back.
        cursor.execute(f"ALTER TABLE guardrails_auditevent ENABLE TRIGGER {AUDIT_TRUNCATE_TRIGGER}")
        # The old session-setting escape hatch no longer exists.
        cursor.execute("SET LOCAL quorum.audit_allow_truncate = 'on'")
        cursor.execute(sql)
    assert AuditEvent.objects.filter(workspace=workspace).exists()


@pytest.mark.postgres
def test_the_trigger_function_has_no_escape_hatch(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'guardrails_audit_refuse'")
        (source,) = cursor.fetchone()
    assert "current_setting" not in source and "RETURN NULL" not in source


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_never_fork_the_chain(workspace_factory):
    ws = workspace_factory()
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            barrier.wait()
            for i in range(5):
                audit_record(
                    action="test.concurrent",
                    actor=Actor("system", None, f"t{n}"),
                    workspace=ws,
                    payload={"n": n, "i": i},
                )
        except BaseException as exc:  # collected, asserted below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    status = chain_verify(chain=f"ws:{ws.pk}")
    assert status.broken is None
    assert status.checked == 41
