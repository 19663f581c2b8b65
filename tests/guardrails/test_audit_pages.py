"""The audit trail in the browser: filters, streamed exports, chain status."""

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


def _page_cost(client, slug) -> tuple[int, int]:
    """(queries, entries the chain check read) for one view of the audit page."""
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/w/{slug}/audit/")
    assert response.status_code == 200 and "Chain verified" in response.content.decode()
    return len(queries), response.context["chain_status"].checked


def test_the_page_verifies_only_what_is_new_since_its_last_check(
    workspace_factory, alice, client_for
):
    client = client_for(alice)
    small, large = (workspace_factory(owner=alice) for _ in range(2))
    for i in range(300):
        audit_record(action="test.bulk", actor=SYSTEM, workspace=large, payload={"i": i})
    # The first view walks the whole chain.
    assert _page_cost(client, small.slug)[1] == 1
    assert _page_cost(client, large.slug)[1] == 301
    # Afterwards the cost is the same whatever the chain's length: nothing new, nothing read.
    small_cost, large_cost = _page_cost(client, small.slug), _page_cost(client, large.slug)
    assert small_cost == large_cost and small_cost[1] == 0
    for ws in (small, large):
        for i in range(3):
            audit_record(action="test.more", actor=SYSTEM, workspace=ws, payload={"i": i})
    small_cost, large_cost = _page_cost(client, small.slug), _page_cost(client, large.slug)
    assert small_cost == large_cost == (small_cost[0], 3)


def test_under_asgi_the_export_is_an_async_stream_of_pages(trail, alice, monkeypatch):
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    from guardrails import exports

    for i in range(5):
        audit_record(action="test.page", actor=SYSTEM, workspace=trail, payload={"i": i})
    monkeypatch.setattr(exports, "PAGE_SIZE", 2)
    client = AsyncClient()
    client.force_login(alice)

    async def fetch(fmt):
        response = await client.get(f"/w/{trail.slug}/audit/export.{fmt}")
        assert response.is_async  # Django would buffer a sync iterator under ASGI
        return [chunk async for chunk in response.streaming_content]

    lines = async_to_sync(fetch)("jsonl")
    assert len(lines) == 4  # 8 entries in pages of 2, one chunk per page
    seqs = [json.loads(line)["seq"] for chunk in lines for line in chunk.decode().splitlines()]
    assert seqs == list(range(1, 9))
    chunks = async_to_sync(fetch)("csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(chunks).decode())))
    assert [int(r["seq"]) for r in rows] == list(range(1, 9))
    assert json.loads(rows[2]["payload"])["approvers"] == ["vera@example.com"]
