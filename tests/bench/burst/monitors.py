"""What is sampled while the burst runs, each on a thread of its own: PostgreSQL connections
to the benchmark's database (every 100 ms), the workers' memory and the Celery queue's depth
in Redis (every 500 ms). The PostgreSQL sampler connects to the `postgres` database, so it is
not among what it counts."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import redis

from tests.bench.burst.procs import rss_bytes
from tests.bench.burst.stack import BENCH_APP, Services


@dataclass
class Samples:
    pg_connections: list[tuple[float, int]] = field(default_factory=list)
    # By application name: the most open at once, and every connection seen (pid and start;
    # one that lived less than the 100 ms between samples can be missed).
    pg_peak_by_app: dict[str, int] = field(default_factory=dict)
    pg_seen_by_app: dict[str, set[tuple[int, float]]] = field(default_factory=dict)
    worker_rss: list[tuple[float, int]] = field(default_factory=list)  # total bytes
    queue_depth: list[tuple[float, int]] = field(default_factory=list)


class Monitors:
    def __init__(self, services: Services, worker_pids: list[int], queue: str) -> None:
        self.services, self.worker_pids, self.queue = services, worker_pids, queue
        self.samples = Samples()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._pg, daemon=True),
            threading.Thread(target=self._slow, daemon=True),
        ]

    def start(self) -> Monitors:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> Samples:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        return self.samples

    def _pg(self) -> None:
        query = (
            "SELECT application_name, pid, backend_start FROM pg_stat_activity WHERE datname = %s"
        )
        samples = self.samples
        with self.services.admin() as conn:
            while not self._stop.wait(0.1):
                rows = conn.execute(query, (self.services.database,)).fetchall()
                # The product's connections (web and workers), not the benchmark's own reads.
                product = [r for r in rows if r[0] != BENCH_APP]
                samples.pg_connections.append((time.time(), len(product)))
                now: dict[str, int] = {}
                for application, pid, started in rows:
                    now[application] = now.get(application, 0) + 1
                    seen = samples.pg_seen_by_app.setdefault(application, set())
                    seen.add((pid, started.timestamp()))
                for application, count in now.items():
                    peak = samples.pg_peak_by_app.get(application, 0)
                    samples.pg_peak_by_app[application] = max(peak, count)

    def _slow(self) -> None:
        client = redis.Redis.from_url(self.services.redis_url)
        while not self._stop.wait(0.5):
            now = time.time()
            self.samples.worker_rss.append((now, sum(rss_bytes(self.worker_pids).values())))
            self.samples.queue_depth.append((now, int(client.llen(self.queue))))


def pg_sessions(services: Services) -> int:
    """pg_stat_database.sessions of the benchmark's database (PostgreSQL 14 and later): every
    connection ever made to it."""
    with services.admin() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", (services.database,)
        ).fetchone()
    return int(row[0]) if row else 0
