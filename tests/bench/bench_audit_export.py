"""Audit export and audit page benchmark: `python -m tests.bench.bench_audit_export`.

Seeds one workspace chain of N audit events (default 50,000; hashed and sealed with the same
pure functions the application writes with, inserted in batches) and a second chain of 1,000.
Then, in this process:

- streams GET /w/<slug>/audit/export.{jsonl,csv} of the large chain through Django's real ASGI
  handler (the path daphne serves), discarding the body, and reports bytes, chunks, seconds, and
  the memory growth while streaming: tracemalloc peak above the baseline and RSS growth. With
  --buffered it also measures the same export served from a sync iterator, which Django drains
  into a list under ASGI (what the export did before it streamed async pages);
- views GET /w/<slug>/audit/ for both chains twice and reports the entries the chain check read
  and the queries of each view: the first view walks the chain, the second only what is new,
  so the second costs the same for 1,000 and N entries.

Without DATABASE_URL a scratch SQLite database is used. With DATABASE_URL, point it at a scratch
PostgreSQL database: it is migrated and filled (audit rows cannot be deleted afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

SCRATCH = Path(tempfile.mkdtemp(prefix="quorum-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["QUORUM_VAR_DIR"] = str(SCRATCH)
os.environ.pop("REDIS_URL", None)
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
os.environ.setdefault("DEBUG", "0")  # no query log growing with the export

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.signals import request_started  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.utils import timezone  # noqa: E402

from guardrails import views as guardrail_views  # noqa: E402
from guardrails.audit import chain_name  # noqa: E402
from guardrails.chain import entry_hash, head_mac, key_id  # noqa: E402
from guardrails.keys import audit_key  # noqa: E402
from guardrails.models import AuditChainHead, AuditEvent  # noqa: E402
from guardrails.verification import chain_verify  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

MB = 1024 * 1024


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def seed(workspace, n: int, batch: int = 2000) -> None:
    """Append n events to the workspace's chain exactly as audit_record would, in batches."""
    key, kid = audit_key(), key_id(audit_key())
    chain = chain_name(workspace)
    head = AuditChainHead.objects.get(chain=chain)
    seq, prev, now = head.seq, head.last_hash, timezone.now()
    pending = []
    for i in range(n):
        seq += 1
        event = AuditEvent(
            chain=chain,
            seq=seq,
            workspace=workspace,
            actor_kind="user",
            actor_id=1,
            actor_label="bench@example.com",
            action="prPublish.executed" if i % 10 == 0 else "rules.changed",
            target_type="reviewspace",
            target_id=str(i % 500),
            target_label=f"acme/app#{i % 500}",
            payload={
                "requester": "bob@example.com",
                "approvers": ["vera@example.com"],
                "result": {"url": f"https://github.example/r/{i}"},
                "head_sha": f"{i:040x}",
                "note": "x" * 120,
            },
            created_at=now,
            ip="127.0.0.1",
            user_agent="bench",
            prev_hash=prev,
            key_id=kid,
        )
        event.hash = entry_hash(prev, event.content(), key)
        prev = event.hash
        pending.append(event)
        if len(pending) == batch:
            AuditEvent.objects.bulk_create(pending)
            pending = []
    AuditEvent.objects.bulk_create(pending)
    mac = head_mac(key, chain=chain, seq=seq, last_hash=prev, legacy_seq=head.legacy_seq)
    # A bulk load jumps the head past many events at once, which the head's trigger refuses
    # (it moves one append at a time): the bench runs as the table's owner and lifts it.
    lift = connection.vendor == "postgresql"
    toggle = (
        "ALTER TABLE guardrails_auditchainhead {} TRIGGER guardrails_auditchainhead_append_only"
    )
    with connection.cursor() as cursor:
        if lift:
            cursor.execute(toggle.format("DISABLE"))
        AuditChainHead.objects.filter(pk=head.pk).update(seq=seq, last_hash=prev, mac=mac)
        if lift:
            cursor.execute(toggle.format("ENABLE"))


async def stream_export(app, path: str, cookie: str, *, trace: bool) -> dict:
    received = {"bytes": 0, "chunks": 0, "status": None, "rss_max": 0}
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"cookie", cookie.encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    sent_request = False

    async def receive():
        nonlocal sent_request
        if not sent_request:
            sent_request = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            received["status"] = message["status"]
        elif message["type"] == "http.response.body":
            received["bytes"] += len(message.get("body", b""))
            received["chunks"] += 1
            received["rss_max"] = max(received["rss_max"], rss_bytes())

    rss_before = rss_bytes()
    if trace:
        tracemalloc.start()
        base, _ = tracemalloc.get_traced_memory()
    started = time.perf_counter()
    await app(scope, receive, send)
    seconds = time.perf_counter() - started
    result = {
        "status": received["status"],
        "bytes": received["bytes"],
        "chunks": received["chunks"],
        "seconds": round(seconds, 2),
        "rss_growth_mb": round(max(0, received["rss_max"] - rss_before) / MB, 1),
    }
    if trace:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        result["tracemalloc_peak_growth_mb"] = round((peak - base) / MB, 1)
    return result


def page_cost(client: Client, slug: str) -> dict:
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get(f"/w/{slug}/audit/")
        ms = (time.perf_counter() - started) * 1000
    status = response.context["chain_status"]
    assert status.broken is None, status.broken
    # The chain check alone, as the view just ran it (the rest of the page is the listing).
    started = time.perf_counter()
    chain_verify(chain=status.chain, incremental=True)
    check_ms = (time.perf_counter() - started) * 1000
    return {
        "entries_read": status.checked,
        "queries": len(queries),
        "page_ms": round(ms, 1),
        "next_check_ms": round(check_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--no-trace", action="store_true", help="RSS only (faster)")
    parser.add_argument("--buffered", action="store_true", help="also measure the old way")
    args = parser.parse_args()

    setup_test_environment()
    # The embedded review sweeper starts on the first ASGI request; it is not what is measured
    # here and its thread would only add noise.
    request_started.disconnect(dispatch_uid="reviews-embedded-sweeper")
    call_command("migrate", verbosity=0, interactive=False)
    suffix = str(time.time_ns())[-8:]
    owner = get_user_model().objects.create_user(
        username=f"bench{suffix}@example.com", email=f"bench{suffix}@example.com"
    )
    large = workspace_create(name=f"Audit bench large {suffix}", owner=owner)
    small = workspace_create(name=f"Audit bench small {suffix}", owner=owner)
    started = time.perf_counter()
    seed(large, args.events)
    seed(small, args.small)
    seeded = time.perf_counter() - started

    client = Client()
    client.force_login(owner)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    app = get_asgi_application()
    report: dict = {
        "database": connection.vendor,
        "events": args.events + 1,
        "seed_seconds": round(seeded, 1),
        "export": {},
    }
    for fmt in ("jsonl", "csv"):
        # Warm up on the small chain: the first request imports and caches what every later
        # one reuses, which is not growth with the export's size.
        asyncio.run(stream_export(app, f"/w/{small.slug}/audit/export.{fmt}", cookie, trace=False))
        path = f"/w/{large.slug}/audit/export.{fmt}"
        report["export"][fmt] = asyncio.run(
            stream_export(app, path, cookie, trace=not args.no_trace)
        )
    if args.buffered:
        # A sync iterator under ASGI: Django drains it into a list before the first byte.
        guardrail_views.ASGIRequest = type("NotASGI", (), {})
        path = f"/w/{large.slug}/audit/export.jsonl"
        report["export"]["jsonl_buffered"] = asyncio.run(
            stream_export(app, path, cookie, trace=not args.no_trace)
        )

    report["page"] = {}
    for label, ws in (("small", small), ("large", large)):
        first = page_cost(client, ws.slug)
        second = page_cost(client, ws.slug)
        report["page"][label] = {"first_view": first, "second_view": second}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
