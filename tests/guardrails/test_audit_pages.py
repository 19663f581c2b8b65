"""The audit trail in the browser: filters, streamed exports, chain status (DESIGN.md §3.12)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db import connection

from guardrails.audit import SYSTEM, Target, audit_record
from guardrails.models import AuditEvent


@pytest.fixture
def trail(workspace):
    audit_record(
        action="approval.requested",
        actor=SYSTEM,
        workspace=workspace,
        target=Target("reviewspace", "7", "acme/app#5"),
        payload={"requester": "bob@example.com"},
    )
    audit_record(
        action="prPublish.executed",
        actor=SYSTEM,
        workspace=workspace,
        target=Target("reviewspace", "7", "acme/app#5"),
        payload={
            "requester": "bob@example.com",
            "approvers": ["vera@example.com"],
            "result": {"url": "https://github.example/r/1"},
            "head_sha": "abc1234567",
        },
    )
    return workspace


def test_every_member_reads_the_trail_and_filters_it(trail, member_factory, client_for):
    viewer = member_factory(trail, "viewer")
    client = client_for(viewer)
    html = client.get(f"/w/{trail.slug}/audit/").content.decode()
    assert "Chain verified" in html and "workspace.created" in html
    who = client.get(f"/w/{trail.slug}/audit/?action=prPublish.executed").content.decode()
    assert "prPublish.executed" in who and "workspace.created" not in who
    assert "approved by vera@example.com" in who and "https://github.example/r/1" in who
    assert f'href="/w/{trail.slug}/reviews/7/"' in who


def test_exports_are_streamed_csv_and_json_lines(trail, alice, client_for):
    client = client_for(alice)
    response = client.get(f"/w/{trail.slug}/audit/export.csv?action=prPublish")
    assert response.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["action"] for r in rows] == ["prPublish.executed"]
    assert json.loads(rows[0]["payload"])["approvers"] == ["vera@example.com"]
    lines = (
        b"".join(client.get(f"/w/{trail.slug}/audit/export.jsonl").streaming_content)
        .decode()
        .splitlines()
    )
    assert [json.loads(line)["action"] for line in lines] == [
        "workspace.created",
        "approval.requested",
        "prPublish.executed",
    ]
    assert client.get(f"/w/{trail.slug}/audit/export.xml").status_code == 404


def test_an_outsider_sees_no_trail(trail, charlie, client_for):
    assert client_for(charlie).get(f"/w/{trail.slug}/audit/").status_code == 404
    assert client_for(charlie).get(f"/w/{trail.slug}/audit/export.csv").status_code == 404


@pytest.mark.postgres
def test_the_page_reports_a_tampered_entry_exactly(trail, alice, client_for):
    victim = AuditEvent.objects.get(workspace=trail, action="approval.requested")
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE guardrails_auditevent DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE guardrails_auditevent SET actor_label = 'someone else' WHERE id = %s",
            [victim.pk],
        )
        cursor.execute("ALTER TABLE guardrails_auditevent ENABLE TRIGGER USER")
    html = client_for(alice).get(f"/w/{trail.slug}/audit/").content.decode()
    assert f"Chain broken at entry #{victim.seq} (event id {victim.pk})" in html
