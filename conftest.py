"""Root pytest configuration: service requirements and shared fixtures.

Tests that need PostgreSQL, Redis or Chromium carry a marker. Without the service they are
skipped locally; with QUORUM_REQUIRE_SERVICES=1 (CI) a missing service is a failure, so a green
CI run can never hide skipped service tests. CI's run of the embedded default (no services)
passes --require-browser: there only the PostgreSQL and Redis tests may skip.

CI's second run, on PostgreSQL and Redis, passes --skip-service-free: it leaves out the tests
that cannot reach a service, which the embedded run has just run identically (see
`service_free` below for the rule). Everything that can touch the database, Redis, a browser
or a child process reading DATABASE_URL/REDIS_URL still runs there.
"""

from __future__ import annotations

import ast
import functools
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
    parser.addoption(
        "--skip-service-free",
        action="store_true",
        default=False,
        help="deselect the tests that provably reach no service (conftest.service_free): CI's "
        "PostgreSQL + Redis run, after the embedded run has run them",
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


# --- Tests that reach no service ------------------------------------------------------------
#
# A test is service-free when nothing it runs can read the settings that differ between CI's two
# runs (DATABASE_URL, REDIS_URL and what Django derives from them: the database, the cache, the
# channel layer, the Celery broker, DEBUG...). The check is static and conservative:
#   1. no postgres/redis/browser/django_db marker;
#   2. the test module, the modules defining the fixtures it requests (transitively, autouse
#      ones apart: they run in every test and touch no service), and every project module those
#      import (transitively) import none of SERVICE_PACKAGES, and none of their sources names a
#      word of SERVICE_WORDS (a child process that would read the environment, a dynamic import).
# Such a test gives the same result in both runs, so the PostgreSQL + Redis run may leave it to
# the embedded run (--skip-service-free). A change that makes a test reach a service (an import
# of Django, a subprocess of manage.py) puts it back in both runs without anyone deciding to.

PROJECT_PACKAGES = {"reviews", "workspaces", "guardrails", "tests"}
SERVICE_PACKAGES = {
    "config",  # the settings, Celery's app, the ASGI application
    "django",
    "pytest_django",
    "channels",
    "channels_redis",
    "celery",
    "kombu",
    "redis",
    "psycopg",
    "daphne",
    "ninja",
    "allauth",
    "playwright",
    "schemathesis",
}
SERVICE_WORDS = (
    "DATABASE_URL",
    "REDIS_URL",
    "DJANGO_SETTINGS_MODULE",
    "manage.py",
    "celery",
    "daphne",
    "import_module",
    "__import__",
    "importlib",
)
ROOT = Path(__file__).resolve().parent


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(name: str, path: Path) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*parts, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


@functools.cache
def _module_reaches_services(name: str) -> str | None:
    """Why the module (a project or third-party module name) may reach a service, or None."""
    seen: set[str] = set()
    stack = [name]
    while stack:
        module = stack.pop()
        if module in seen:
            continue
        seen.add(module)
        top = module.split(".")[0]
        if top in SERVICE_PACKAGES:
            return f"imports {module}"
        if top not in PROJECT_PACKAGES:
            continue  # the standard library or a package that is not a service client
        parts = module.split(".")
        stack.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # packages' __init__
        path = _module_file(module)
        if path is None:
            continue  # `from package import name` where name is no module
        source = path.read_text()
        for word in SERVICE_WORDS:
            if word in source:
                return f"{module} names {word}"
        stack.extend(_imports(module, path))
    return None


def service_free(item) -> bool:
    """True when the test provably reaches no service (the rule above)."""
    if any(item.get_closest_marker(m) for m in ("postgres", "redis", "browser", "django_db")):
        return False
    module = getattr(item, "module", None)
    if module is None or _module_reaches_services(module.__name__):
        return False
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    params = set(getattr(getattr(item, "callspec", None), "params", {}))
    pending, seen = [n for n in info.argnames if n not in params], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        definitions = info.name2fixturedefs.get(name)
        if not definitions:
            return False
        definition = definitions[-1]
        if _module_reaches_services(definition.func.__module__):
            return False
        pending.extend(definition.argnames)
    return True


def _long_first(items) -> None:
    """The longest tests start first, one per xdist worker: one started last would leave the
    other workers idle while it runs. xdist first hands each worker a chunk of consecutive
    tests (a quarter of its share), so each long test goes at the head of a chunk."""
    long = [item for item in items if item.get_closest_marker("long")]
    if not long:
        return
    rest = [item for item in items if not item.get_closest_marker("long")]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    chunk = max(len(items) // workers // 4, 2) if workers > 1 else 1
    for index, item in enumerate(long):
        # Past one per worker: the first tests handed out after the initial chunks.
        at = index * chunk if index < workers else workers * chunk + index - workers
        rest.insert(min(at, len(rest)), item)
    items[:] = rest


def pytest_collection_modifyitems(config, items):
    if config.getoption("--skip-service-free"):
        kept, left = [], []
        for item in items:
            (left if service_free(item) else kept).append(item)
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = kept
    _long_first(items)
