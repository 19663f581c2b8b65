"""`python -m config.serve`: several daphne processes on one port, started again when one dies,
all stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.bench.burst.procs import tree_pids

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _daphnes(pid: int) -> list[int]:
    return [p for p in tree_pids([pid]) if p != pid]


def _healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as answer:
            return answer.status
    except OSError:
        return 0


def _until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_serve_runs_several_daphne_processes_restarts_a_dead_one_and_stops_them_all():
    port = _free_port()
    env = {**os.environ, "SECRET_KEY": os.environ.get("SECRET_KEY") or "x" * 50}
    command = [sys.executable, "-m", "config.serve", "--port", str(port), "--processes", "2"]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    try:
        _until(lambda: _healthz(port) == 200, 60, "the web tier did not answer")
        first = _daphnes(server.pid)
        assert len(first) == 2
        # Every connection is answered, whichever process takes it.
        assert all(_healthz(port) == 200 for _ in range(6))

        os.kill(first[0], signal.SIGKILL)
        _until(
            lambda: len(_daphnes(server.pid)) == 2 and first[0] not in _daphnes(server.pid),
            30,
            "the dead process was not replaced",
        )
        assert _healthz(port) == 200

        children = _daphnes(server.pid)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
        for pid in children:
            _until(lambda pid=pid: not Path(f"/proc/{pid}").exists(), 10, f"{pid} outlived serve")
    finally:
        if server.poll() is None:
            for pid in _daphnes(server.pid):
                os.kill(pid, signal.SIGKILL)
            server.kill()
            server.wait()
