"""Root pytest configuration: service requirements and shared fixtures.

Tests that need PostgreSQL, Redis or Chromium carry a marker. Without the service they are
skipped locally; with QUORUM_REQUIRE_SERVICES=1 (CI) a missing service is a failure, so a green
CI run can never hide skipped service tests.
"""

from __future__ import annotations

import os
import shutil

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
        if item.config.getoption("--require-services"):
            pytest.fail(f"required service missing: {reason}", pytrace=False)
        pytest.skip(reason)
