"""Start background work after commit: Celery in the full stack, a server thread when embedded.

Work started from the browser must never run inside the request. In the
embedded default there is no broker, so a small thread pool in the server process stands in.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connections, transaction

log = logging.getLogger(__name__)
_executor: ThreadPoolExecutor | None = None
_executor_pid: int | None = None


def _pool() -> ThreadPoolExecutor:
    """The process's pool. A forked server process must not inherit its parent's pool, whose
    threads did not survive the fork (work handed to it would never run)."""
    global _executor, _executor_pid
    if _executor is None or _executor_pid != os.getpid():
        _executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="quorum-bg")
        _executor_pid = os.getpid()
    return _executor


def _run_in_thread(task: Any, args: tuple, kwargs: dict) -> None:
    close_old_connections()
    try:
        task.run(*args, **kwargs)
    except Exception:
        log.exception("background task %s failed", getattr(task, "name", task))
    finally:
        connections.close_all()


class QueueUnavailable(Exception):
    """The broker did not take the task. Work whose rows are already committed is not lost:
    the pipeline's sweeper finds it in the database and queues it again."""


def submit_now(task: Any, *args: Any, **kwargs: Any) -> Future | None:
    if settings.REDIS_URL:
        from kombu.exceptions import OperationalError as BrokerError
        from redis.exceptions import RedisError

        try:
            task.apply_async(args=args, kwargs=kwargs)
        except (BrokerError, RedisError, OSError) as exc:
            raise QueueUnavailable(f"the task queue is unavailable: {exc}") from exc
        return None
    return _pool().submit(_run_in_thread, task, args, kwargs)


def enqueue(task: Any, *args: Any, **kwargs: Any) -> None:
    """Queue a Celery task once the surrounding transaction commits (never inside it)."""
    transaction.on_commit(lambda: submit_now(task, *args, **kwargs))
