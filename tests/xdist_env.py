"""Gives each pytest-xdist worker its own Redis database, before Django reads its settings.

Loaded with `-p tests.xdist_env` (pyproject's addopts), so it runs before pytest-django
configures Django. Workers share PostgreSQL safely (pytest-django gives each its own test
database, `_gw0`, `_gw1`, …), but a channel layer, a Celery broker or a cache on one Redis
database would be shared: worker N uses database REDIS_URL's + 1 + N instead. Subprocesses a
test starts (Celery workers, `manage.py mcp`, daphne) inherit the worker's environment.

It also renders every version of a review page (`QUORUM_PAGE_FRESH_MS=0`): a test that changes
a review and loads its page expects the change at once; the tests of the fresh-page window turn
it on themselves. Likewise each committed change reaches the open pages at once
(`QUORUM_LIVE_WINDOW_MS=0`): a socket test expects one message per change, in order; the
tests of the live window (tests/reviews/test_live_window.py) turn it on.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

REDIS_DATABASES = 16


def worker_redis_url(url: str, worker: str) -> str:
    """`url` with its database number moved past the base one by the worker's index."""
    index = int(worker.removeprefix("gw"))
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    database = base + 1 + index
    if database >= REDIS_DATABASES:
        raise RuntimeError(
            f"xdist worker {worker} would need Redis database {database}: use fewer workers"
        )
    return urlunsplit(parts._replace(path=f"/{database}"))


os.environ.setdefault("QUORUM_PAGE_FRESH_MS", "0")
os.environ.setdefault("QUORUM_LIVE_WINDOW_MS", "0")
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], _worker)
