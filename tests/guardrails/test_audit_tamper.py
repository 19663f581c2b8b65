"""What `audit_verify` reports after someone with the table owner's rights, but without the
audit key, changes the trail behind the application's back."""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from io import StringIO
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from guardrails.audit import SYSTEM, audit_record
from guardrails.chain import GENESIS, UNKEYED, entry_hash, head_mac, key_id, legacy_hash
from guardrails.keys import audit_key
from guardrails.models import AuditChainHead, AuditEvent, AuditVerification

pytestmark = pytest.mark.postgres
WRONG_KEY = b"w" * 32


@pytest.fixture
def trail(workspace_factory, alice):
    """Alice's workspace chain of 8 entries, verified once (so the page has a checkpoint)."""
    ws = workspace_factory("Tamper Inc", owner=alice)
    for i in range(7):
        audit_record(action="test.event", actor=SYSTEM, workspace=ws, payload={"i": i})
    out = StringIO()
    call_command("audit_verify", "--workspace", ws.slug, stdout=out)
    assert "OK" in out.getvalue() and "8 entries verified, head matches" in out.getvalue()
    return ws


@contextmanager
def as_owner():
    """Lift the row triggers inside this test's transaction, as the table's owner could."""
    triggers = [
        ("guardrails_auditevent", "guardrails_auditevent_append_only"),
        ("guardrails_auditchainhead", "guardrails_auditchainhead_append_only"),
    ]
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for table, trigger in triggers:
            cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
        yield cursor
        for table, trigger in triggers:
            cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {trigger}")


def verify_fails(ws) -> str:
    out = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("audit_verify", "--workspace", ws.slug, stdout=out)
    assert exc.value.returncode == 1
    return out.getvalue()


def rewrite(ws, *, key: bytes | None, from_seq: int = 1) -> str:
    """Recompute every hash from `from_seq` on with `key` (None: plain SHA-256); return the
    last hash."""
    events = list(AuditEvent.objects.filter(workspace=ws).order_by("seq"))
    prev = events[from_seq - 2].hash if from_seq > 1 else GENESIS
    with as_owner() as cursor:
        for e in events[from_seq - 1 :]:
            if key is None:
                digest, kid = legacy_hash(prev, e.content()), UNKEYED
            else:
                digest, kid = entry_hash(prev, e.content(), key), key_id(key)
            cursor.execute(
                "UPDATE guardrails_auditevent SET prev_hash = %s, hash = %s, key_id = %s "
                "WHERE id = %s",
                [prev, digest, kid, e.pk],
            )
            prev = digest
    return prev


def test_an_altered_payload_is_named_exactly(trail):
    victim = AuditEvent.objects.get(workspace=trail, seq=4)
    with as_owner() as cursor:
        cursor.execute(
            "UPDATE guardrails_auditevent SET payload = %s WHERE id = %s", ['{"i": 999}', victim.pk]
        )
    out = verify_fails(trail)
    assert f"entry #4 (event id {victim.pk})" in out and "altered" in out


def test_a_deleted_tail_is_reported(trail):
    with as_owner() as cursor:
        cursor.execute(
            "DELETE FROM guardrails_auditevent WHERE chain = %s AND seq > 5", [f"ws:{trail.pk}"]
        )
    out = verify_fails(trail)
    assert "the chain ends at #5 but its head records #8 (tail deleted)" in out


def test_a_deleted_tail_with_a_rewound_head_is_reported_without_the_key(trail):
    last = AuditEvent.objects.get(workspace=trail, seq=5).hash
    with as_owner() as cursor:
        cursor.execute(
            "DELETE FROM guardrails_auditevent WHERE chain = %s AND seq > 5", [f"ws:{trail.pk}"]
        )
        AuditChainHead.objects.filter(chain=f"ws:{trail.pk}").update(seq=5, last_hash=last)
    assert "head row does not carry a valid MAC" in verify_fails(trail)


def test_a_deleted_middle_entry_is_a_gap(trail):
    with as_owner() as cursor:
        cursor.execute(
            "DELETE FROM guardrails_auditevent WHERE chain = %s AND seq = 3", [f"ws:{trail.pk}"]
        )
    assert "entry #4" in (out := verify_fails(trail)) and "sequence gap" in out


@pytest.mark.parametrize("forged_with", [None, WRONG_KEY], ids=["plain-sha256", "wrong-key"])
def test_a_recomputed_chain_is_reported(trail, forged_with):
    last = rewrite(trail, key=forged_with, from_seq=3)
    # The forger also moves the head onto the forged chain, sealing it as best they can.
    with as_owner():
        AuditChainHead.objects.filter(chain=f"ws:{trail.pk}").update(
            last_hash=last,
            mac=head_mac(
                forged_with or WRONG_KEY,
                chain=f"ws:{trail.pk}",
                seq=8,
                last_hash=last,
                legacy_seq=0,
            ),
        )
    victim = AuditEvent.objects.get(workspace=trail, seq=3)
    out = verify_fails(trail)
    assert f"entry #3 (event id {victim.pk})" in out
    if forged_with is None:
        assert "unkeyed entry after the chain was keyed" in out
    else:
        assert "under the audit key" in out


def test_a_deleted_head_row_is_reported(trail):
    AuditChainHead.objects.filter(chain=f"ws:{trail.pk}").delete()
    assert "no head row" in verify_fails(trail)
    # Without a workspace filter the chain is still found through its entries.
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("audit_verify", stdout=out)
    assert f"BROKEN  ws:{trail.pk}" in out.getvalue()


def test_an_entry_inserted_beyond_the_head_is_reported(trail):
    last = AuditEvent.objects.get(workspace=trail, seq=8)
    forged = AuditEvent(
        chain=last.chain,
        seq=9,
        workspace=trail,
        actor_kind="system",
        actor_label="system",
        action="forged",
        payload={},
        created_at=last.created_at,
        prev_hash=last.hash,
        key_id=key_id(WRONG_KEY),
    )
    forged.hash = entry_hash(forged.prev_hash, forged.content(), WRONG_KEY)
    forged.save()
    assert "beyond the head" in verify_fails(trail)


def test_a_failed_full_check_shows_on_the_page_even_before_its_checkpoint(trail, alice, client_for):
    client = client_for(alice)
    assert "Chain verified" in client.get(f"/w/{trail.slug}/audit/").content.decode()
    victim = AuditEvent.objects.get(workspace=trail, seq=2)
    with as_owner() as cursor:
        cursor.execute(
            "UPDATE guardrails_auditevent SET actor_label = 'x' WHERE id = %s", [victim.pk]
        )
    # The page only looks at what is new since its checkpoint...
    assert "Chain verified" in client.get(f"/w/{trail.slug}/audit/").content.decode()
    # ...until the full walk finds the change and drops the checkpoint.
    verify_fails(trail)
    assert not AuditVerification.objects.filter(chain=f"ws:{trail.pk}").exists()
    html = client.get(f"/w/{trail.slug}/audit/").content.decode()
    assert f"Chain broken at entry #2 (event id {victim.pk})" in html


def test_a_forged_checkpoint_is_ignored(trail, alice, client_for):
    victim = AuditEvent.objects.get(workspace=trail, seq=2)
    with as_owner() as cursor:
        cursor.execute(
            "UPDATE guardrails_auditevent SET actor_label = 'x' WHERE id = %s", [victim.pk]
        )
    verify_fails(trail)
    head = AuditChainHead.objects.get(chain=f"ws:{trail.pk}")
    AuditVerification.objects.create(
        chain=head.chain,
        seq=head.seq,
        hash=head.last_hash,
        mac="f" * 64,
        verified_at=timezone.now(),
    )
    html = client_for(alice).get(f"/w/{trail.slug}/audit/").content.decode()
    assert "Chain broken at entry #2" in html


def test_chains_written_before_the_key_still_verify_after_the_migration(trail):
    """Existing entries are not re-keyed: they stay plain SHA-256 up to the sealed legacy_seq."""
    chain = f"ws:{trail.pk}"
    last = rewrite(trail, key=None)  # the trail as the unkeyed version wrote it
    with as_owner():  # the head as it stood before migration 0008's trigger
        AuditChainHead.objects.filter(chain=chain).update(last_hash=last, mac="", legacy_seq=0)
        migration = importlib.import_module("guardrails.migrations.0005_audit_keyed_chain")
        migration.seal_heads(apps, SimpleNamespace(connection=connection))
    head = AuditChainHead.objects.get(chain=chain)
    assert (head.legacy_seq, head.seq) == (8, 8)

    audit_record(action="test.after", actor=SYSTEM, workspace=trail, payload={})
    out = StringIO()
    call_command("audit_verify", "--workspace", trail.slug, stdout=out)
    assert "9 entries verified" in out.getvalue()
    newest = AuditEvent.objects.get(workspace=trail, seq=9)
    assert newest.key_id == key_id(audit_key()) and newest.prev_hash == last

    # An old entry altered after the migration is still caught by its plain SHA-256.
    with as_owner() as cursor:
        cursor.execute(
            "UPDATE guardrails_auditevent SET action = 'x' WHERE chain = %s AND seq = 2", [chain]
        )
    assert "entry #2" in verify_fails(trail)


def test_a_head_altered_outside_the_app_stays_unsealed_after_the_next_write(trail, caplog):
    with as_owner():
        AuditChainHead.objects.filter(chain=f"ws:{trail.pk}").update(legacy_seq=8)
    audit_record(action="test.after", actor=SYSTEM, workspace=trail, payload={})
    assert AuditChainHead.objects.get(chain=f"ws:{trail.pk}").mac == ""
    assert "not sealed" in caplog.text
    assert "head row does not carry a valid MAC" in verify_fails(trail)


def test_a_row_forged_ahead_of_the_head_does_not_stop_audited_writes(trail, alice, client_for):
    """Inserted with the application's own credentials, one row ahead of the head used to make
    every audited write of the workspace fail (its number was taken). The writes go on,
    chained from the sealed head, and the verifier keeps naming the intruder."""
    last = AuditEvent.objects.get(workspace=trail, seq=8)
    forged = AuditEvent(
        chain=last.chain,
        seq=9,
        workspace=trail,
        actor_kind="system",
        actor_label="system",
        action="forged",
        payload={},
        created_at=last.created_at,
        prev_hash=last.hash,
        key_id=key_id(WRONG_KEY),
    )
    forged.hash = entry_hash(forged.prev_hash, forged.content(), WRONG_KEY)
    forged.save()
    client = client_for(alice)
    client.raise_request_exception = False
    saved = client.post(f"/w/{trail.slug}/settings/github-handle/", {"github_handle": "alice-gh"})
    assert saved.status_code == 302, saved.status_code
    event = audit_record(action="test.after", actor=SYSTEM, workspace=trail, payload={})
    written = AuditEvent.objects.filter(workspace=trail, seq__gt=9).order_by("seq")
    assert [e.seq for e in written] == [10, 11] and event.seq == 11
    assert written[0].prev_hash == last.hash  # chained from the sealed head, not the intruder
    out = verify_fails(trail)
    assert "entry #9" in out and f"key id {key_id(WRONG_KEY)}" in out
    html = client.get(f"/w/{trail.slug}/audit/").content.decode()
    assert "Chain broken at entry #9" in html
