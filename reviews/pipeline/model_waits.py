"""While a step waits on the model: it holds no database connection, and it stops when its
round ends.

- `release_connection`: a pooled connection goes back to the pool before a model call and after
  a tool's write (a worker runs tens of calls at once; each would otherwise keep a connection it
  does not use for the whole call). The next query takes one again.
- `round_stop`: a `StopToken` for the runs of one round. One thread per process looks, every
  `QUORUM_STOP_POLL_SECONDS`, whether a round with runs in this process was stopped (superseded
  by a push, cancelled, failed, timed out), in one query for all of them, and stops their runs:
  the requests in flight are cancelled and no new one goes out. It looks at the database, not at
  a message, so it works whichever process or machine ended the round. A finished round is not
  stopped: its requirements reviewer runs again once a person supplies the request.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection, connections

from reviews.agents.call_limits import StopToken
from reviews.models import ReviewRound

log = logging.getLogger(__name__)

STOPPED_STATES = (
    ReviewRound.State.SUPERSEDED,
    ReviewRound.State.CANCELLED,
    ReviewRound.State.FAILED,
)


def release_connection() -> None:
    """Give this thread's pooled connection back to the pool, unless a transaction needs it.
    Without a pool (SQLite, `QUORUM_DB_POOL_MAX=0`) the connection stays: closing it would
    only open another one after the call."""
    if connection.settings_dict.get("OPTIONS", {}).get("pool") and not connection.in_atomic_block:
        connection.close()


class _Watch:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[int, set[StopToken]] = {}
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, round_id: int, token: StopToken) -> None:
        with self._lock:
            self._tokens.setdefault(round_id, set()).add(token)
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                # A forked process does not inherit its parent's thread.
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="round-stops", daemon=True)
                self._thread.start()

    def remove(self, round_id: int, token: StopToken) -> None:
        with self._lock:
            tokens = self._tokens.get(round_id)
            if tokens is not None:
                tokens.discard(token)
                if not tokens:
                    del self._tokens[round_id]

    def _run(self) -> None:
        interval = settings.QUORUM_STOP_POLL_SECONDS
        idle = threading.Event()
        while not idle.wait(interval):
            with self._lock:
                watched = list(self._tokens)
            if not watched:
                continue
            try:
                ended = dict(
                    ReviewRound.objects.filter(
                        pk__in=watched, state__in=STOPPED_STATES
                    ).values_list("pk", "state")
                )
            except Exception as exc:  # the database blipped: look again next time
                log.warning("could not look for ended rounds (%s)", exc)
                ended = {}
            finally:
                connections.close_all()
            for round_id, state in ended.items():
                with self._lock:
                    tokens = list(self._tokens.get(round_id, ()))
                for token in tokens:
                    token.stop(f"the round was {state}")


_watch = _Watch()


@contextmanager
def round_stop(round_id: int) -> Iterator[StopToken]:
    """A token that stops the model runs given it once round `round_id` has ended."""
    token = StopToken()
    _watch.add(round_id, token)
    try:
        yield token
    finally:
        _watch.remove(round_id, token)
