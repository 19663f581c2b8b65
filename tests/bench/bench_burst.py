"""Thirty pull requests at once: `python -m tests.bench.bench_burst` (needs PostgreSQL 14+ and
Redis; issue 42).

Starts the full stack as production runs it: a PostgreSQL database of its own (created, then
dropped: `--database`), a Redis database of its own (`--redis-url`, refused if someone else's
keys are in it, flushed at the end), the web tier (`--web-processes` daphne processes on one
socket, as `python -m config.serve` runs them), and `--workers` Celery worker processes started
with the production command (threads from the settings; `--concurrency` sets how many); the
strict fake GitHub serves one repository and the fake model answers every call after
`--model-latency` seconds (the balanced tier's reviewers run on it). Then:

1. one pull request alone, twice (the first warms the workers): the unloaded latency, its CPU,
   and the findings every other round must match;
2. the burst: `--prs` signed `opened` webhooks sent evenly within `--spread` seconds, while
   `--readers` people load review pages, `--pages` review pages (of the first pull requests)
   and `--list-pages` reviews lists keep their websockets open, and `--pushes` pull requests
   (every other one of the last) get a commit and a `synchronize` webhook once their round's
   reviewers are under way.

It prints JSON figures (latencies, CPU and memory of the workers, the pages' versions behind and
verdict delays, page and webhook answer times, PostgreSQL connections, correctness) with the
load average, then each of the issue's goals with PASS or FAIL. `--prs 3` is a smoke run.
Every process is killed (its whole group) and the database dropped when it ends, however it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.burst.procs import cpu_seconds, machine_busy_seconds, tree_pids
from tests.bench.burst.stack import (
    Services,
    Stack,
    base_env,
    database_create,
    database_drop,
    free_port,
    redis_claim,
    redis_release,
)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prs", type=int, default=30, help="pull requests in the burst")
    p.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    p.add_argument(
        "--concurrency", type=int, default=None, help="threads per worker (QUORUM_WORKER_THREADS)"
    )
    p.add_argument("--web-processes", type=int, default=2, help="daphne processes (config.serve)")
    p.add_argument("--model-latency", type=float, default=0.5, help="seconds per model call")
    p.add_argument("--pushes", type=int, default=None, help="default: a third of --prs")
    p.add_argument("--pages", type=int, default=20, help="review pages with their socket")
    p.add_argument("--list-pages", type=int, default=2, help="reviews lists with their socket")
    p.add_argument("--readers", type=int, default=20, help="people loading review pages")
    p.add_argument("--spread", type=float, default=2.0, help="seconds to send the webhooks in")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds the drain may take")
    p.add_argument("--database", default="quorum_burst")
    p.add_argument("--redis-url", default="redis://127.0.0.1:6379/13")
    p.add_argument("--pg-host", default="127.0.0.1")
    p.add_argument("--pg-port", type=int, default=5432)
    p.add_argument("--pg-user", default="postgres")
    p.add_argument("--keep", action="store_true", help="keep the database and the logs")
    p.add_argument(
        "--rounds-at-once",
        type=int,
        default=None,
        help="QUORUM_ROUNDS_AT_ONCE of the stack (default: the setting's; 0: no bound)",
    )
    args = p.parse_args(argv)
    if args.pushes is None:
        args.pushes = args.prs // 3
    args.pushes = min(args.pushes, args.prs // 2)
    args.pages = min(args.pages, args.prs)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    scratch = Path(tempfile.mkdtemp(prefix="quorum-burst-"))
    (scratch / "logs").mkdir()
    services = Services(args.database, args.pg_host, args.pg_port, args.pg_user, args.redis_url)
    env = base_env(services, scratch)
    if args.rounds_at_once is not None:
        env["QUORUM_ROUNDS_AT_ONCE"] = str(args.rounds_at_once)
    os.environ.update(env)
    import django

    django.setup()
    from tests.bench.burst.scenario import fakes_env, fakes_start

    pulls = list(range(1, args.prs + 1))
    alone = [args.prs + 1, args.prs + 2]  # warm-up, then the reference
    fakes = fakes_start(scratch, pulls + alone, args.model_latency)
    env |= fakes_env(fakes)
    stack = Stack(env, scratch / "logs", services)
    created = False  # only the database this run created is dropped
    try:
        redis_claim(services.redis_url)
        database_create(services)
        created = True
        from django.db import connection

        from tests.bench.burst import records

        seeded = records.seed()
        connection.close()  # this thread is done with the database: the stack's own
        port = free_port()
        stack.start_web(port, args.web_processes)
        stack.start_workers(args.workers, args.concurrency)
        report = measure(args, services, stack, fakes, seeded, port, pulls, alone)
    finally:
        stack.stop()
        fakes.stop()
        redis_release(services.redis_url)
        if created and not args.keep:
            database_drop(services)
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    report["logs"] = str(scratch / "logs") if args.keep else None
    return emit(report)


def emit(report: dict[str, Any]) -> int:
    from tests.bench.burst.figures import goals

    checks = goals(report)
    report["goals"] = {g.name: {"value": g.value, "goal": g.goal, "ok": g.ok} for g in checks}
    print(json.dumps(report, indent=2, default=str))
    for goal in checks:
        print(goal.line())
    # The exit status says whether the harness measured, not whether the goals are met.
    complete = report["correctness"]["lost"] == 0 and report["latency"]["drain_seconds"]
    return 0 if complete else 1


def measure(
    args: argparse.Namespace,
    services: Services,
    stack: Stack,
    fakes: Any,
    seeded: Any,
    port: int,
    pulls: list[int],
    alone: list[int],
) -> dict[str, Any]:
    from tests.bench.burst import records
    from tests.bench.burst.clients import Db
    from tests.bench.burst.monitors import Monitors, pg_sessions
    from tests.bench.burst.runner import Context, Plan, run_alone, run_burst

    db = Db()
    ctx = Context(port, fakes, db, seeded.slug, seeded.cookie, services.redis_url)
    workers = stack.worker_pids()
    single: list[dict[str, Any]] = []
    for number in alone:
        cpu, sessions, began = cpu_seconds(workers), pg_sessions(services), time.time()
        asyncio.run(run_alone(ctx, number, args.timeout))
        (last,) = asyncio.run(db(records.rounds_of, number))
        time.sleep(1.0)  # backends report their sessions to the statistics within a second
        single.append(
            {
                "pull_request": number,
                "state": last.state,
                "verdict": last.verdict,
                "latency_seconds": round((last.verdict_at or time.time()) - began, 2),
                "worker_cpu_seconds": round(cpu_seconds(workers) - cpu, 2),
                "pg_new_connections": pg_sessions(services) - sessions,
            }
        )
    reference_round = asyncio.run(db(records.rounds_of, alone[-1]))[-1].pk
    pushes = pulls[-2 * args.pushes :: 2][: args.pushes] if args.pushes else []
    plan = Plan(pulls, pushes, args.pages, args.list_pages, args.readers, args.spread, args.timeout)
    before = snapshot(services, stack, pg_sessions)
    monitors = Monitors(services, workers, stack.env["QUORUM_CELERY_QUEUE"]).start()
    try:
        burst = asyncio.run(run_burst(ctx, plan))
    finally:
        samples = monitors.stop()
    after = snapshot(services, stack, pg_sessions)
    rows = {n: asyncio.run(db(records.rounds_of, n)) for n in pulls}
    finished = {n: r[-1].pk for n, r in rows.items() if r and r[-1].state == "finished"}
    nodes = {n: asyncio.run(db(records.node_set, pk)) for n, pk in finished.items()}
    reference = asyncio.run(db(records.node_set, reference_round))
    ledger = asyncio.run(db(records.ledger))
    from django.db import connections

    db.close(connections.close_all)  # resolved on the ORM thread: its own connection
    calls = {
        **ledger,
        "received": len(fakes.model.recorded()),
        "tokens_received": fakes.model.tokens_received,
    }
    from tests.bench.burst.report import assemble

    found = (nodes, reference, calls)
    return assemble(args, plan, burst, rows, single, before, after, samples, stack, found)


def snapshot(services: Services, stack: Stack, pg_sessions: Any) -> dict[str, float]:
    time.sleep(1.0)  # backends report their sessions to the statistics within a second
    return {
        "at": time.time(),
        "workers_cpu": cpu_seconds(stack.worker_pids()),
        "web_cpu": cpu_seconds([stack.web_pid()]),
        # Each web process's own: how evenly the kernel spread the connections over them.
        "web_processes_cpu": {p: cpu_seconds([p]) for p in tree_pids([stack.web_pid()])[1:]},
        "own_cpu": sum(os.times()[:2]),
        "machine_cpu": machine_busy_seconds(),
        "pg_sessions": pg_sessions(services),
        "load": os.getloadavg()[0],
    }


if __name__ == "__main__":
    sys.exit(main())
