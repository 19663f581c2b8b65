"""Surviving a database that drops its connections (a restart, a failover, an operator's
pg_terminate_backend): close the broken connection, wait a little, try again, and past a bound
give up quietly so the lease lapses and the sweeper re-runs the work. A blip is never a failure
of the review."""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg
import stamina
from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)

# Django wraps the driver's errors; the driver's own can escape from code that uses it directly.
CONNECTION_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)
# Waits of 0.5, 1, 2, 4 and 8 s between six attempts, about 15 s in all: a restart, not an outage.
ATTEMPTS = 6
FIRST_WAIT = 0.5
LONGEST_WAIT = 8.0


def is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, CONNECTION_ERRORS)


def reset_connection() -> None:
    """Drop this thread's connection so the next query opens a fresh one."""
    try:
        connection.close()
    except Exception:  # closing a dead socket may fail too; the next query reconnects anyway
        connection.connection = None


def retry_db[T](call: Callable[[], T], *, what: str, attempts: int = ATTEMPTS) -> T:
    """Run `call`; on a lost connection reconnect and run it again, up to `attempts` tries in
    all. The last error propagates: the caller decides what giving up means."""
    for attempt in stamina.retry_context(
        on=CONNECTION_ERRORS,
        attempts=attempts,
        timeout=None,
        wait_initial=FIRST_WAIT,
        wait_max=LONGEST_WAIT,
        wait_jitter=0.0,
    ):
        with attempt:
            try:
                return call()
            except CONNECTION_ERRORS as exc:
                reset_connection()
                if attempt.num < attempts:
                    log.warning(
                        "%s lost the database (%s); again in %.1f s", what, exc, attempt.next_wait
                    )
                raise
    raise AssertionError("unreachable")  # pragma: no cover
