"""Start background work after commit: Celery in the full stack, a server thread when embedded.

Work started from the browser must never run inside the request. In the
embedded default there is no broker, so a small thread pool in the server process stands in.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connections, transaction

from config.celery import app

log = logging.getLogger(__name__)
_executor: ThreadPoolExecutor | None = None
_executor_pid: int | None = None
_submitted: weakref.WeakSet[Future] = weakref.WeakSet()


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


_tasks_import = threading.Lock()


def task_named(name: str) -> Any:
    """The registered Celery task called `name`. Services queue work by the task's name, so a
    service never imports the tasks module that itself calls services."""

    if name not in app.tasks:
        # The apps' tasks modules are imported on first use (a worker imports them at start).
        # One thread imports; the others wait for it: two webhooks arriving together at a
        # fresh web process otherwise found the registry still empty (NotRegistered, a 500).
        with _tasks_import:
            if name not in app.tasks:
                app.loader.import_default_modules()
    return app.tasks[name]


def submit_now(task: Any, *args: Any, **kwargs: Any) -> Future | None:
    """Run `task` (a Celery task or a task's name) in the background now."""
    if isinstance(task, str):
        task = task_named(task)
    if settings.REDIS_URL:
        from kombu.exceptions import OperationalError as BrokerError
        from redis.exceptions import RedisError

        try:
            task.apply_async(args=args, kwargs=kwargs)
        except (BrokerError, RedisError, OSError) as exc:
            raise QueueUnavailable(f"the task queue is unavailable: {exc}") from exc
        return None
    future = _pool().submit(_run_in_thread, task, args, kwargs)
    _submitted.add(future)
    return future


def drain(timeout: float) -> bool:
    """Wait until the background work started so far in this process (embedded default) has
    ended, work it started included; False if some is still running after `timeout` seconds.
    With Celery there is nothing here to wait for."""
    deadline = time.monotonic() + timeout
    while pending := [f for f in list(_submitted) if not f.done()]:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        futures_wait(pending, timeout=left)
    return True


def enqueue(task: Any, *args: Any, **kwargs: Any) -> None:
    """Queue a Celery task (or a task's name) once the surrounding transaction commits (never
    inside it)."""
    transaction.on_commit(lambda: submit_now(task, *args, **kwargs))
