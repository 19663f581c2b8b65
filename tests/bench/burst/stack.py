"""The full stack's processes: a database and a Redis database of the benchmark's own, the web
tier as production runs it (`python -m config.serve`: several daphne processes on one port)
and N Celery workers. Every process is started in a
session of its own and `Stack.stop` kills each whole process group, so nothing outlives the
benchmark, whatever went wrong."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis

ROOT = Path(__file__).resolve().parents[3]
MARKER = "quorum:bench-burst:owner"  # set in the benchmark's Redis database while it owns it
# Each kind of process connects to PostgreSQL under a name of its own.
BENCH_APP, WEB_APP, WORKER_APP = "burst-bench", "burst-web", "burst-worker"


@dataclass(frozen=True)
class Services:
    database: str  # created (dropped first if it exists) and dropped by the benchmark
    pg_host: str = "127.0.0.1"
    pg_port: int = 5432
    pg_user: str = "postgres"
    redis_url: str = "redis://127.0.0.1:6379/13"

    def database_url(self, application: str) -> str:
        """The URL a process of the stack connects with; `application` names its connections
        in pg_stat_activity (dj-database-url passes it to psycopg)."""
        base = f"postgres://{self.pg_user}@{self.pg_host}:{self.pg_port}/{self.database}"
        return f"{base}?application_name={application}"

    def admin(self) -> psycopg.Connection:
        """A connection to the `postgres` database: neither counted in the benchmark database's
        figures nor in its way when it is dropped."""
        return psycopg.connect(
            host=self.pg_host,
            port=self.pg_port,
            user=self.pg_user,
            dbname="postgres",
            autocommit=True,
        )


def database_create(services: Services) -> None:
    with services.admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{services.database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{services.database}"')


def database_drop(services: Services) -> None:
    with services.admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{services.database}" WITH (FORCE)')


def redis_claim(url: str) -> None:
    """Take the Redis database for this run: it must be empty, or left by an earlier run of
    this benchmark that is no longer running (its marker names its process); never database
    0, nor one someone else is using."""
    client = redis.Redis.from_url(url)
    if client.connection_pool.connection_kwargs.get("db", 0) == 0:
        raise SystemExit("the benchmark needs a Redis database of its own, not database 0")
    owner = client.get(MARKER)
    if client.dbsize() and (owner is None or _alive(int(owner))):
        raise SystemExit(f"{url} holds keys of someone else: choose another --redis-url")
    client.flushdb()
    client.set(MARKER, str(os.getpid()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def redis_release(url: str) -> None:
    client = redis.Redis.from_url(url)
    if client.get(MARKER) == str(os.getpid()).encode():
        client.flushdb()  # that database only, and only if it is still ours


def base_env(services: Services, scratch: Path) -> dict[str, str]:
    """The environment of every process of the stack, and of this one (set before Django
    starts: the session cookie this process makes must verify in the server)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("QUORUM_", "GITHUB_"))}
    for name in ("DEBUG", "PYTEST_XDIST_WORKER"):
        keep.pop(name, None)
    return {
        **keep,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": services.database_url(BENCH_APP),
        "REDIS_URL": services.redis_url,
        "SECRET_KEY": "bench-burst-" + os.urandom(24).hex(),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "QUORUM_AUDIT_KEY": os.urandom(24).hex(),
        "QUORUM_CELERY_QUEUE": "quorum-burst-" + os.urandom(4).hex(),
        "QUORUM_WORKTREE_ROOT": str(scratch / "worktrees"),
        "QUORUM_VAR_DIR": str(scratch / "var"),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Stack:
    env: dict[str, str]
    logs: Path
    services: Services
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def _spawn(
        self, name: str, command: list[str], application: str, extra: dict[str, str] | None = None
    ) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("wb")
        try:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env={
                    **self.env,
                    "DATABASE_URL": self.services.database_url(application),
                    **(extra or {}),
                },
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed whole by stop()
            )
        finally:
            log.close()
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def start_web(self, port: int, processes: int) -> None:
        """The production command (docker/compose.yaml): it binds the port at once, so the
        stack is ready when a request is answered."""
        command = [sys.executable, "-m", "config.serve", "--bind", "127.0.0.1", "--port", str(port)]
        process = self._spawn("web", [*command, "--processes", str(processes)], WEB_APP)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the web tier exited: {self.log('web')[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("the web tier did not answer within 90 s")

    def start_workers(self, count: int, threads: int | None = None) -> None:
        """The production worker command (docker/compose.yaml, docs/operations.md): its pool
        and threads come from the settings; `threads` sets QUORUM_WORKER_THREADS."""
        queue = self.env["QUORUM_CELERY_QUEUE"]
        extra = {"QUORUM_WORKER_THREADS": str(threads)} if threads else {}
        for index in range(count):
            self._spawn(
                f"worker-{index}",
                [
                    *(sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel"),
                    *("INFO", "-Q", queue, "--without-gossip", "--without-mingle"),
                    *("--hostname", f"b{index}-{queue}@%h"),
                ],
                WORKER_APP,
                extra,
            )
        deadline = time.monotonic() + 120
        for index in range(count):
            name = f"worker-{index}"
            while "ready." not in self.log(name):
                if self.processes[name].poll() is not None:
                    raise RuntimeError(f"{name} exited: {self.log(name)[-2000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} was not ready within 120 s")
                time.sleep(0.2)

    def worker_pids(self) -> list[int]:
        return [p.pid for name, p in self.processes.items() if name.startswith("worker-")]

    def web_pid(self) -> int:
        return self.processes["web"].pid  # its daphne processes are its children

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for process in self.processes.values():
            # The group too: a pool child or a git process left behind by its parent.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            if process.poll() is None:
                process.wait(timeout=10)
