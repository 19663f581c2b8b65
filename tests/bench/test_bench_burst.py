"""The burst benchmark keeps working (tests/bench/bench_burst.py, issue 42): a smoke run of
three pull requests on the full stack, one pushed to mid-flight, reviews each once per head,
loses none, supersedes cleanly, records every model call in the spend ledger, finds in each
what the same change finds alone, and delivers every verdict to the open pages.

Its timing goals are not asserted here (they are what the benchmark measures, and most fail
today); what is asserted must hold on any machine. The benchmark runs in a subprocess with a
PostgreSQL database of its own (created and dropped) and a Redis database of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

ROOT = Path(__file__).resolve().parents[2]


def _redis_url() -> str:
    """A database of its own per xdist worker, away from the ones the workers use (1–5)."""
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    base = settings.REDIS_URL.rsplit("/", 1)[0] if settings.REDIS_URL.count("/") > 2 else ""
    return os.environ.get("QUORUM_BENCH_BURST_REDIS_URL") or f"{base}/{14 - index}"


@pytest.mark.long
def test_a_smoke_burst_reviews_every_pull_request_once_and_reaches_the_pages():
    db = settings.DATABASES["default"]
    command = [
        *(sys.executable, "-m", "tests.bench.bench_burst", "--prs", "3", "--workers", "1"),
        *("--readers", "4", "--list-pages", "1", "--model-latency", "0.2", "--timeout", "180"),
        *("--database", f"quorum_burst_test_{os.getpid()}", "--redis-url", _redis_url()),
        *("--pg-host", db["HOST"] or "127.0.0.1", "--pg-port", str(db["PORT"] or 5432)),
        *("--pg-user", db["USER"] or "postgres"),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    report = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    ok = report["correctness"]
    assert (ok["lost"], ok["duplicated"], ok["failed"]) == (0, 0, 0), ok
    assert ok["pushes"] == 1 and ok["pushes_clean"], ok
    assert ok["model_calls_equal_ledger"], ok
    assert ok["findings_identical"] and ok["findings_reference"] > 0, ok
    pages = report["live_pages"]
    assert pages["handshakes_failed"] == 0, pages
    assert pages["sockets_without_their_verdict"] == 0, pages
    assert pages["versions_behind_at_end_max"] == 0, pages
    assert report["http"]["page_reads"] > 0 and report["http"]["page_reads_not_200"] == 0
    assert report["workers"]["cpu_seconds"] > 0 and report["postgres"]["connections_peak"]
    assert set(report["goals"]) >= {"drain_seconds", "pg_connections_peak"}
