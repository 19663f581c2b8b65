"""Surviving a database that drops its connections (a restart, a failover, an operator's
pg_terminate_backend): close the broken connection, wait a little, try again, and past a bound
give up quietly so the lease lapses and the sweeper re-runs the work. A blip is never a failure
of the review."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import psycopg
from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)

# Django wraps the driver's errors; the driver's own can escape from code that uses it directly.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)
DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)  # about 15 s in all: a restart, not an outage


def is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, CONNECTION_ERRORS)


def reset_connection() -> None:
    """Drop this thread's connection so the next query opens a fresh one."""
    try:
        connection.close()
    except Exception:  # closing a dead socket may fail too; the next query reconnects anyway
        connection.connection = None


def retry_db[T](call: Callable[[], T], *, what: str, delays: tuple[float, ...] = DELAYS) -> T:
    """Run `call`; on a lost connection reconnect and run it again, at most len(delays) times.
    The last error propagates: the caller decides what giving up means."""
    for delay in (*delays, None):
        try:
            return call()
        except CONNECTION_ERRORS as exc:
            reset_connection()
            if delay is None:
                raise
            log.warning("%s lost the database (%s); again in %.1f s", what, exc, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
