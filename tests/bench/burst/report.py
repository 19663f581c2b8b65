"""The run's report: every figure in one JSON-ready dict (goals are added by figures.goals)."""

from __future__ import annotations

import argparse
from typing import Any

from tests.bench.burst.checks import correctness
from tests.bench.burst.figures import MB, http_figures, latencies, socket_figures, task_times
from tests.bench.burst.monitors import Samples
from tests.bench.burst.procs import rss_bytes
from tests.bench.burst.records import RoundRow
from tests.bench.burst.runner import Burst, Plan
from tests.bench.burst.stack import Stack


def assemble(
    args: argparse.Namespace,
    plan: Plan,
    burst: Burst,
    rows: dict[int, list[RoundRow]],
    single: list[dict[str, Any]],
    before: dict[str, float],
    after: dict[str, float],
    samples: Samples,
    stack: Stack,
    found: tuple[dict[int, frozenset], frozenset, dict[str, int]],
) -> dict[str, Any]:
    rounds = sum(len(r) for r in rows.values())
    cpu = after["workers_cpu"] - before["workers_cpu"]
    logs = [stack.log(name) for name in stack.processes if name.startswith("worker-")]
    peak_pg = max((n for _, n in samples.pg_connections), default=None)
    return {
        "setup": {
            "prs": args.prs,
            "workers": args.workers,
            "concurrency": args.concurrency,
            "model_latency": args.model_latency,
            "pushes": len(plan.pushes),
            "review_pages": plan.pages,
            "list_pages": plan.list_pages,
            "readers": plan.readers,
            "spread_seconds": args.spread,
        },
        "load_average_1min": {"before": round(before["load"], 2), "after": round(after["load"], 2)},
        "drained": burst.drained,
        "alone": {"cold": single[0], "warm": single[1]},
        "latency": latencies(plan, burst, rows),
        "workers": {
            "rounds": rounds,
            "cpu_seconds": round(cpu, 1),
            "cpu_seconds_per_round": round(cpu / max(rounds, 1), 2),
            "cpu_seconds_per_pr": round(cpu / max(len(plan.pulls), 1), 2),
            "cpu_seconds_alone_warm": single[1]["worker_cpu_seconds"],
            "rss_peak_mb": round(max((b for _, b in samples.worker_rss), default=0) / MB, 1),
            "rss_end_mb_by_process": sorted(
                round(b / MB, 1) for b in rss_bytes(stack.worker_pids()).values()
            ),
            "queue_depth_peak": max((n for _, n in samples.queue_depth), default=None),
            "tasks": task_times(logs),
        },
        "web": {
            "cpu_seconds": round(after["web_cpu"] - before["web_cpu"], 1),
            "cpu_seconds_by_process": sorted(
                round(cpu - before["web_processes_cpu"].get(pid, 0.0), 1)
                for pid, cpu in after["web_processes_cpu"].items()
            ),
        },
        "benchmark_process_cpu_seconds": round(after["own_cpu"] - before["own_cpu"], 1),
        # Every process of the machine (two cores, shared with other work), from before the first
        # webhook until the pages caught up (or gave up), and that span.
        "machine_cpu_seconds": round(after["machine_cpu"] - before["machine_cpu"], 1),
        "span_seconds": round(after["at"] - before["at"], 1),
        "live_pages": socket_figures(burst, rows),
        "http": http_figures(burst),
        "postgres": {
            "new_connections": int(after["pg_sessions"] - before["pg_sessions"]),
            "new_connections_per_round": round(
                (after["pg_sessions"] - before["pg_sessions"]) / max(rounds, 1), 1
            ),
            "connections_peak": peak_pg,
            "peak_by_application": samples.pg_peak_by_app,
            "connections_seen_by_application": {
                app: len(seen) for app, seen in samples.pg_seen_by_app.items()
            },
            "note": "connections_peak is web and workers; burst-bench is the benchmark's own "
            "ORM thread, not counted in it; "
            "seen_by_application is a lower bound (sampled every 100 ms)",
        },
        "correctness": correctness(plan, burst, rows, *found),
    }
