"""Root pytest configuration: service requirements and shared fixtures.

Tests that need PostgreSQL, Redis or Chromium carry a marker. Without the service they are
skipped locally; with QUORUM_REQUIRE_SERVICES=1 (CI) a missing service is a failure, so a green
CI run can never hide skipped service tests. CI's run of the embedded default (no services)
passes --require-browser: there only the PostgreSQL and Redis tests may skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.fixtures",
    "tests.fakes.fixtures",
    "tests.fakes.model_fixtures",
    "tests.celery_support",
    "tests.publishing_fixtures",
    "tests.e2e.support",
]


def pytest_addoption(parser):
    parser.addoption(
        "--require-services",
        action="store_true",
        default=os.environ.get("QUORUM_REQUIRE_SERVICES") == "1",
        help="fail (instead of skip) tests whose PostgreSQL/Redis/Chromium is missing",
    )
    parser.addoption(
        "--require-browser",
        action="store_true",
        default=False,
        help="fail (instead of skip) browser tests when Chromium is missing; PostgreSQL and "
        "Redis tests still skip without their service (the embedded default's run in CI)",
    )


def _service_missing(marker: str) -> str | None:
    from django.conf import settings
    from django.db import connection

    if marker == "postgres":
        if connection.vendor != "postgresql":
            return "needs PostgreSQL: set DATABASE_URL=postgres://…"
    elif marker == "redis":
        if not settings.REDIS_URL:
            return "needs Redis: set REDIS_URL=redis://…"
        import redis

        try:
            redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2).ping()
        except redis.RedisError as exc:
            return f"Redis at REDIS_URL is not answering: {exc}"
    elif marker == "browser" and not shutil.which("chromium"):
        return "needs Chromium (Debian package chromium)"
    return None


def pytest_runtest_setup(item):
    for name in ("postgres", "redis", "browser"):
        if item.get_closest_marker(name) is None:
            continue
        reason = _service_missing(name)
        if reason is None:
            continue
        required = item.config.getoption("--require-services") or (
            name == "browser" and item.config.getoption("--require-browser")
        )
        if required:
            pytest.fail(f"required service missing: {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """The embedded test database is a file (one per xdist worker): a run that was killed
    leaves its write-ahead log beside it, and a new database file next to an old log reads as
    "database disk image is malformed". The old log goes before the database is created."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    name = (db.get("TEST") or {}).get("NAME")
    if db["ENGINE"].endswith("sqlite3") and name:
        for leftover in ("-wal", "-shm", "-journal"):
            Path(f"{name}{leftover}").unlink(missing_ok=True)
