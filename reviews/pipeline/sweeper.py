"""The sweeper: a timer thread that hands stalled rounds back to a coordinator.

Every Celery worker runs one (started on worker_ready); the embedded server runs one in its own
process. Each tick, the first worker whose turn it is (one conditional UPDATE of the
PipelineSweep row, so the cluster sweeps once per interval) runs `runner.recover`. A tick that
meets a dead broker or database logs it and waits for the next one: the sweeper must outlive the
outages it exists to repair.

Why a row and not an advisory lock: the turn is taken and released in one statement, so no
connection has to stay open to hold it (pg_terminate_backend cannot strand it), it rate-limits
the whole cluster rather than just serialising sweeps, and it works on SQLite too.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import timedelta

from django.conf import settings
from django.db import connections
from django.utils import timezone

from guardrails.services.execution import approvals_resume, approvals_settle_stuck
from reviews.models import PipelineSweep
from reviews.pipeline.faults import reset_connection
from reviews.pipeline.runner import recover
from reviews.services.sarif import sarif_uploads_resume

log = logging.getLogger(__name__)
TURN = "pipeline"


def take_turn(interval: float, *, force: bool = False) -> bool:
    """True if this process sweeps now; the next turn is then due `interval` seconds later.
    `force` (a process that just started) sweeps regardless, and still pushes the turn on."""
    now = timezone.now()
    PipelineSweep.objects.get_or_create(name=TURN, defaults={"next_at": now})
    due = PipelineSweep.objects.filter(name=TURN)
    if not force:
        due = due.filter(next_at__lte=now)
    return due.update(next_at=now + timedelta(seconds=interval), last_swept_at=now) == 1


def sweep_once(*, force: bool = False, interval: float | None = None) -> int | None:
    """One tick: the number of rounds handed back, or None if it was not this process's turn."""

    interval = settings.QUORUM_SWEEP_SECONDS if interval is None else interval
    if not take_turn(interval, force=force):
        return None
    dispatched = recover()
    PipelineSweep.objects.filter(name=TURN).update(last_dispatched=dispatched)
    # Approved publish requests whose execution message was lost (e.g. Redis was down).

    approvals_resume()
    # Approved requests whose worker died during the call: looked up after their lease.
    approvals_settle_stuck()
    # SARIF uploads whose message was lost or whose worker died while recording them.

    sarif_uploads_resume(older_than=interval)
    if dispatched:
        log.info("sweeper: %s stalled round(s) handed back to a coordinator", dispatched)
    return dispatched


class Sweeper:
    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="quorum-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        force = True  # a process that just started recovers at once (what a crash left)
        while not self._stop.is_set():
            try:
                sweep_once(force=force, interval=self.interval)
                force = False
            except Exception as exc:  # broker or database away: the next tick tries again
                log.warning(
                    "sweeper: tick failed (%s: %s); next in %ss",
                    type(exc).__name__,
                    exc,
                    self.interval,
                )
                reset_connection()
            finally:
                connections.close_all()  # no idle connection for an outage to break
            self._stop.wait(self.interval)


_sweeper: Sweeper | None = None
_sweeper_pid: int | None = None
_lock = threading.Lock()


def start_sweeper() -> Sweeper | None:
    """Start this process's sweeper once (a forked child starts its own); None when disabled
    (QUORUM_SWEEP_SECONDS=0)."""
    global _sweeper, _sweeper_pid
    interval = settings.QUORUM_SWEEP_SECONDS
    if interval <= 0:
        return None
    with _lock:
        if _sweeper is None or _sweeper_pid != os.getpid():
            _sweeper, _sweeper_pid = Sweeper(interval).start(), os.getpid()
            log.info("sweeper: every %ss", interval)
    return _sweeper


def stop_sweeper() -> None:
    global _sweeper
    with _lock:
        if _sweeper is not None and _sweeper_pid == os.getpid():
            _sweeper.stop()
        _sweeper = None


def start_embedded_sweeper() -> Sweeper | None:
    """The embedded server sweeps for itself; in the full stack the Celery workers do."""
    if settings.REDIS_URL:
        return None
    return start_sweeper()
