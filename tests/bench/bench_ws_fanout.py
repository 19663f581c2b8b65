"""Live review fan-out benchmark: `python -m tests.bench.bench_ws_fanout` (needs Redis).

Runs the real ASGI application (config.asgi.application) under daphne in a subprocess bound to
127.0.0.1 on a free port, on a scratch SQLite database shared with this process, and a Redis
channel layer shared with it too (QUORUM_BENCH_REDIS_URL, by default redis://127.0.0.1:6379/15,
flushed before and
after: that database only). It seeds one review through the services, loads its page once to
read the live version the page would pass to its socket (`?v=`), connects 200 websocket
clients to /ws/reviews/<id>/?v=<that version> with one member's session cookie, and waits for
each client's initial sync (a page that is current gets only the version marker). Then, one change at a time, it dismisses a finding through
reviews.services.nodes.node_dismiss in this process (which emits review.node_status to the
space's group after commit) and times, for every client, the delay from that commit until a
message holding that finding's card (id="node-<pk>") arrives (the service's own time, spent
before the commit, is reported apart as service_ms). It reports:
- p50 / p95 / max of that delay over all clients and changes (default 5);
- deliveries expected (clients x changes), received, and missing (dropped or timed out);
- the spread of one change's delays divided by the clients: each consumer renders its own
  update, so this approximates the server's cost per connected page;
- the channel layer used, and how long connecting all clients took;
- for comparison, the bytes of one sync for a page that cannot say what it shows (no version);
- a verdict: each figure against its goal, PASS or FAIL (GOALS).
The clients are tests/bench/wsclient.py's minimal RFC 6455 client (no websocket library is a
dependency).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# A Redis database of its own: it is flushed before and after (never database 0).
REDIS_URL = os.environ.get("QUORUM_BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")
SCRATCH = Path(tempfile.mkdtemp(prefix="quorum-bench-"))
BASE_DIR = Path(__file__).resolve().parents[2]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["QUORUM_VAR_DIR"] = str(SCRATCH)
os.environ.pop("DATABASE_URL", None)  # the SQLite file in SCRATCH is shared with the server
os.environ["REDIS_URL"] = REDIS_URL  # so is the channel layer (not embedded: DEBUG is off)
os.environ["SECRET_KEY"] = secrets.token_urlsafe(50)  # the same in both: session hashes
os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost"
os.environ.pop("DEBUG", None)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402

from reviews.domain.types import AxisName, AxisResult  # noqa: E402
from reviews.models import ReviewerStream, ReviewNode, ReviewRound  # noqa: E402
from reviews.services.axes import axis_record  # noqa: E402
from reviews.services.node_recording import node_record  # noqa: E402
from reviews.services.nodes import node_confirm, node_dismiss  # noqa: E402
from reviews.services.rounds import round_start  # noqa: E402
from reviews.services.spaces import pull_request_upsert, space_get_or_create  # noqa: E402
from reviews.services.verdicts import round_finalise  # noqa: E402
from tests.bench.wsclient import HandshakeFailed  # noqa: E402
from tests.bench.wsclient import WsClient as Socket  # noqa: E402
from tests.fixtures import node_payload  # noqa: E402
from workspaces.models import Membership, Repository  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

STREAMS = ("implementation", "quality", "security")
CONNECT_CONCURRENCY = 20  # daphne closes a socket not accepted within 5 s (its default)
# figure → (goal, how it is compared): what "good enough" means for the live review page.
GOALS = {
    "connect_and_sync_seconds": (3.0, "<="),
    "sync_bytes_per_socket": (10_000, "<="),
    "delivery_p95_ms": (250.0, "<"),
    "drops": (0, "=="),
}


# --- the page's websocket -------------------------------------------------------------------


class WsClient(Socket):
    """One page's websocket: its first message is the sync, the others are timed updates."""

    def __init__(self, port: int, path: str, cookie: str) -> None:
        cookie_pair = (settings.SESSION_COOKIE_NAME, cookie)
        super().__init__(port, path, cookie_pair, clock=time.perf_counter)

    @property
    def sync(self) -> asyncio.Event:
        return self.first

    @property
    def sync_bytes(self) -> int:
        return len(self.messages[0][1].encode()) if self.messages else 0

    @property
    def updates(self) -> list[tuple[float, str]]:
        return self.messages[1:]

    def arrival_of(self, marker: str, after: float) -> float | None:
        for arrived, text in self.updates:
            if arrived >= after and marker in text:
                return arrived
        return None


# --- seeding and the server ----------------------------------------------------------------


def seed_review(repository: Repository, *, nodes: int) -> ReviewRound:
    pr = pull_request_upsert(
        repository=repository,
        number=1,
        base_ref="main",
        head_ref="feature",
        head_sha="b" * 40,
        title="Fan-out bench",
    )
    space = space_get_or_create(pull_request=pr)
    review_round = round_start(space=space, head_sha=pr.head_sha, tier="balanced")
    streams = [
        ReviewerStream.objects.create(round=review_round, name=s, agent=s, dimension=s)
        for s in STREAMS
    ]
    for i in range(nodes):
        payload = node_payload(
            title=f"Finding {i}",
            priority=f"P{(i * 7) % 4}",
            confidence=0.5 + (i % 50) / 100,
            anchor={"path": f"app/module_{i % 8}.py", "start_line": 10 + i, "end_line": 11 + i},
        )
        node = node_record(stream=streams[i % len(streams)], payload=payload).node
        assert node is not None
        if i % 7 == 0:
            node_confirm(node=node, by_agent=STREAMS[(i + 1) % len(STREAMS)])
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.UNAVAILABLE,
        source="deterministic",
        details={"reason": "no public API found"},
    )
    round_finalise(review_round=review_round)
    return review_round


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    log = open(SCRATCH / "server.log", "wb")  # noqa: SIM115 — closed with the process
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    command += ["--access-log", str(SCRATCH / "access.log"), "config.asgi:application"]
    server = subprocess.Popen(
        command,
        cwd=BASE_DIR,
        env=os.environ.copy(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"daphne exited with {server.returncode}; see {SCRATCH}/server.log")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("daphne did not start listening within 30 s")


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def flush_redis() -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    assert client.connection_pool.connection_kwargs.get("db", 0) != 0
    client.flushdb()  # that database only


# --- the measurement -----------------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def full_sync_bytes(port: int, space_id: int, cookie: str, timeout: float) -> int:
    """One socket of a page that passes no version: it gets every section."""
    client = WsClient(port, f"/ws/reviews/{space_id}/", cookie)
    await asyncio.wait_for(client.connect(), timeout)
    await asyncio.wait_for(client.sync.wait(), timeout)
    await client.close()
    return client.sync_bytes


async def run(
    args, port: int, space_id: int, version: str, cookie: str, user, node_ids: list[int]
) -> dict:
    try:
        unversioned: int | str = await full_sync_bytes(port, space_id, cookie, args.timeout)
    except (HandshakeFailed, OSError, TimeoutError) as error:
        unversioned = repr(error)
    path = f"/ws/reviews/{space_id}/?v={version}"
    clients = [WsClient(port, path, cookie) for _ in range(args.clients)]
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)

    async def open_one(client: WsClient) -> None:
        async with gate:
            await asyncio.wait_for(client.connect(), args.timeout)
            await asyncio.wait_for(client.sync.wait(), args.timeout)

    started = time.perf_counter()
    outcomes = await asyncio.gather(*(open_one(c) for c in clients), return_exceptions=True)
    connect_seconds = time.perf_counter() - started
    failed = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    live = [c for c, o in zip(clients, outcomes, strict=True) if o is None and not c.closed]

    django_thread = ThreadPoolExecutor(max_workers=1)  # the ORM stays out of the event loop
    loop = asyncio.get_running_loop()

    def dismiss(pk: int) -> tuple[float, float]:
        """(seconds the service took, the moment it committed)."""
        node = ReviewNode.objects.select_related("stream", "space").get(pk=pk)
        began = time.perf_counter()
        committed: list[float] = []
        with transaction.atomic():
            # Registered first, so it runs at the commit, before the events are sent.
            transaction.on_commit(lambda: committed.append(time.perf_counter()))
            node_dismiss(node=node, user=user, reason="bench")  # group_send runs on commit
        return time.perf_counter() - began, committed[0]

    delays: list[float] = []
    per_change: list[dict[str, Any]] = []
    for pk in node_ids[: args.changes]:
        marker = f'id="node-{pk}"'
        service_seconds, t0 = await loop.run_in_executor(django_thread, dismiss, pk)
        deadline = t0 + args.timeout
        while time.perf_counter() < deadline:
            if all(c.closed or c.arrival_of(marker, t0) is not None for c in live):
                break
            await asyncio.sleep(0.005)
        arrivals = [a for c in live if (a := c.arrival_of(marker, t0)) is not None]
        change = sorted(a - t0 for a in arrivals)
        delays += change
        per_change.append(
            {
                "node": pk,
                "received": len(change),
                "service_ms": round(service_seconds * 1000, 1),
                "first_ms": round(change[0] * 1000, 1) if change else None,
                "last_ms": round(change[-1] * 1000, 1) if change else None,
            }
        )
        await asyncio.sleep(args.pause)
    await loop.run_in_executor(django_thread, lambda: connection.close())  # its own connection
    django_thread.shutdown()

    closed_during = sum(1 for c in live if c.closed)
    close_codes: dict[str, int] = {}
    for c in clients:
        if c.closed:
            key = str(c.close_code or "no close frame")
            close_codes[key] = close_codes.get(key, 0) + 1
    await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    expected = args.clients * args.changes
    spreads = [
        (c["last_ms"] - c["first_ms"]) / max(c["received"] - 1, 1)
        for c in per_change
        if c["received"] > 1
    ]
    return {
        "connect": {
            "clients": args.clients,
            "connected_and_synced": len(live),
            "failed": len(failed),
            "first_failures": failed[:3],
            "seconds_to_connect_all": round(connect_seconds, 1),
            "sync_message_bytes": max((c.sync_bytes for c in live), default=0),
            "sync_message_bytes_without_version": unversioned,
        },
        # Each change is several events (the status, the axes and the verdict that follow it),
        # each a message to every socket.
        "messages_per_client_per_change": round(len(live[0].updates) / args.changes, 1)
        if live
        else None,
        "update_message_bytes_max": max(
            (len(text.encode()) for c in live for _, text in c.updates), default=0
        ),
        "changes": args.changes,
        "delay_ms": {
            "p50": round(percentile(delays, 0.5) * 1000, 1) if delays else None,
            "p95": round(percentile(delays, 0.95) * 1000, 1) if delays else None,
            "max": round(max(delays) * 1000, 1) if delays else None,
        },
        "deliveries": {
            "expected": expected,
            "received": len(delays),
            "missing": expected - len(delays),
            "missing_on_open_sockets": sum(
                1
                for c in live
                if not c.closed
                for pk in node_ids[: args.changes]
                if c.arrival_of(f'id="node-{pk}"', 0) is None
            ),
            "clients_closed_by_server_before_sync": args.clients - len(failed) - len(live),
            "clients_closed_by_server_during_changes": closed_during,
            "server_close_codes": close_codes,
        },
        "server_ms_per_client_per_change": round(sorted(spreads)[len(spreads) // 2], 2)
        if spreads
        else None,
        "per_change": per_change,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--changes", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=100, help="findings in the review")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per wait")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between changes")
    args = parser.parse_args()
    assert 0 < args.changes <= args.nodes

    flush_redis()
    call_command("migrate", verbosity=0)
    users = get_user_model().objects
    owner = users.create_user(username="owner@example.com", email="owner@example.com")
    workspace = workspace_create(name="Bench", owner=owner)
    member = users.create_user(username="member@example.com", email="member@example.com")
    Membership.objects.create(workspace=workspace, user=member, role="reviewer")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/bench"
    )
    review_round = seed_review(repository, nodes=args.nodes)
    node_ids = list(
        ReviewNode.objects.filter(round=review_round, status="open")
        .order_by("id")
        .values_list("pk", flat=True)[: args.changes]
    )
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(member)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    page = client.get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    found = re.search(r'ws-connect="/ws/reviews/\d+/\?v=([^"&]*)', page.content.decode())
    assert page.status_code == 200 and found, "the page passes its live version to the socket"
    version = found.group(1)
    connection.close()  # the server opens the SQLite file now; this thread is done with it

    port = free_port()
    server = start_server(port)
    try:
        result = asyncio.run(
            run(args, port, review_round.space_id, version, cookie, member, node_ids)
        )
    finally:
        stop_server(server)
        flush_redis()
    log = (SCRATCH / "server.log").read_text(errors="replace").splitlines()
    crashes = [line for line in log if "Exception inside application" in line]
    layer: dict[str, Any] = settings.CHANNEL_LAYERS["default"]
    report = {
        "channel_layer": {
            "backend": layer["BACKEND"],
            "capacity": layer.get("CONFIG", {}).get("capacity"),
            "expiry": layer.get("CONFIG", {}).get("expiry"),
            "url": REDIS_URL,
        },
        "nodes_in_review": args.nodes,
        **result,
        "server_errors": {
            "consumers_crashed": len(crashes),
            "distinct": sorted(
                {line.split("Exception inside application: ")[-1] for line in crashes}
            ),
            "log": str(SCRATCH / "server.log"),
        },
    }
    print(json.dumps(report, indent=2))
    print(verdict(result))


def verdict(result: dict) -> str:
    """The figures the live page is held to, each against its goal."""
    figures = {
        "connect_and_sync_seconds": result["connect"]["seconds_to_connect_all"],
        "sync_bytes_per_socket": result["connect"]["sync_message_bytes"],
        "delivery_p95_ms": result["delay_ms"]["p95"],
        "drops": result["deliveries"]["missing"] + result["connect"]["failed"],
    }
    checks = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, "==": lambda a, b: a == b}
    lines = [f"{result['connect']['clients']} sockets:"]
    for name, value in figures.items():
        goal, op = GOALS[name]
        ok = value is not None and checks[op](value, goal)
        lines.append(f"  {'PASS' if ok else 'FAIL'}  {name} = {value} (goal {op} {goal})")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
