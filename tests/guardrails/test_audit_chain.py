"""The audit trail is append-only and hash-chained per workspace (DESIGN.md §3.12)."""

from __future__ import annotations

import itertools
import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, connections, transaction
from hypothesis import given
from hypothesis import strategies as st

from guardrails.audit import SYSTEM, Actor, audit_record
from guardrails.chain import GENESIS, StoredEntry, entry_hash, verify
from guardrails.models import AppendOnlyError, AuditEvent
from guardrails.selectors import audit_chain_verify


def _chain(payloads: list[dict]) -> list[StoredEntry]:
    entries, prev = [], GENESIS
    for seq, payload in enumerate(payloads, start=1):
        content = {"seq": seq, "payload": payload}
        digest = entry_hash(prev, content)
        entries.append(StoredEntry(seq, seq, prev, digest, content))
        prev = digest
    return entries


@given(
    payloads=st.lists(st.dictionaries(st.text(max_size=5), st.integers()), min_size=1, max_size=12),
    data=st.data(),
)
def test_it_detects_any_altered_entry_at_exactly_that_entry(payloads, data):
    entries = _chain(payloads)
    assert verify(entries) is None
    index = data.draw(st.integers(0, len(entries) - 1))
    victim = entries[index]
    altered = StoredEntry(
        victim.event_id,
        victim.seq,
        victim.prev_hash,
        victim.hash,
        {**victim.content, "payload": {"tampered": True}},
    )
    broken = verify([*entries[:index], altered, *entries[index + 1 :]])
    assert broken is not None and broken.seq == victim.seq


def test_it_detects_a_removed_entry():
    entries = _chain([{"a": 1}, {"b": 2}, {"c": 3}])
    broken = verify([entries[0], entries[2]])
    assert broken is not None and broken.seq == 3


def test_it_chains_events_per_workspace(workspace_factory):
    ws1, ws2 = workspace_factory(), workspace_factory()
    for i in range(3):
        audit_record(action="test.event", actor=SYSTEM, workspace=ws1, payload={"i": i})
    audit_record(action="test.event", actor=SYSTEM, workspace=ws2, payload={})
    first = list(AuditEvent.objects.filter(workspace=ws1).order_by("seq"))
    # workspace.created is entry 1 of each chain.
    assert [e.seq for e in first] == [1, 2, 3, 4]
    assert first[0].prev_hash == GENESIS
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(first))
    assert AuditEvent.objects.filter(workspace=ws2).count() == 2
    assert audit_chain_verify(chain=f"ws:{ws1.pk}") == (4, None)


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
        cursor.execute("SET LOCAL quorum.audit_allow_truncate = 'off'")
        cursor.execute(sql)
    assert AuditEvent.objects.filter(workspace=workspace).exists()


@pytest.mark.postgres
def test_audit_verify_names_the_exact_altered_entry(workspace_factory):
    ws = workspace_factory("Tamper Inc")
    for i in range(5):
        audit_record(action="test.event", actor=SYSTEM, workspace=ws, payload={"i": i})
    out = StringIO()
    call_command("audit_verify", "--workspace", ws.slug, stdout=out)
    assert "OK" in out.getvalue() and "6 entries verified" in out.getvalue()

    victim = AuditEvent.objects.get(workspace=ws, seq=4)
    with connection.cursor() as cursor:
        # Lift the protection inside this test's transaction only, as an attacker with the
        # table owner's rights would.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE guardrails_auditevent DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE guardrails_auditevent SET payload = %s WHERE id = %s",
            ['{"i": 999}', victim.pk],
        )
        cursor.execute("ALTER TABLE guardrails_auditevent ENABLE TRIGGER USER")

    out = StringIO()
    with pytest.raises(CommandError):
        call_command("audit_verify", "--workspace", ws.slug, stdout=out)
    assert f"entry #4 (event id {victim.pk})" in out.getvalue()
    assert "altered" in out.getvalue()


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
    count, broken = audit_chain_verify(chain=f"ws:{ws.pk}")
    assert broken is None
    assert count == 41
