"""A migrated test database made once per set of migrations and copied for each xdist worker.

Migrating an empty database costs about 10 s of CPU (47 migrations, SQLite rebuilding tables
on each altered field); every pytest-xdist worker of both CI runs paid it. Here the first
worker to get the lock migrates its own test database as pytest-django would, then keeps a
copy of it as the template, named by a digest of the migration files; the other workers (and
later runs) copy that template (PostgreSQL: `CREATE DATABASE … TEMPLATE`, a file copy; SQLite:
the backup API) and let Django's keepdb migrate find nothing to do. `--create-db` builds the
template again. The copy is made under a temporary name and renamed, so a run killed halfway
leaves no half-made template behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def migrations_digest() -> str:
    """Of every migration file's path and content: a new migration is a new template."""
    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@contextmanager
def _locked(name: str) -> Iterator[None]:
    """One worker at a time, across the run's processes."""
    path = Path(tempfile.gettempdir()) / f"quorum-test-template-{name}.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare_from_template(
    connection, *, rebuild: bool, run: str, migrate: Callable[[bool], None]
) -> None:
    """Give `connection` its test database from the template, making the template first when
    there is none, or when `rebuild` and no other worker of the same `run` (xdist's run id)
    has made it yet. `migrate(keepdb)` is Django's setup_databases."""
    vendor = connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        migrate(False)
        return
    digest = migrations_digest()
    test_name = str(connection.creation._get_test_db_name())
    made_in_run = Path(tempfile.gettempdir()) / f"quorum-test-template-{digest}.{run}"
    with _locked(digest):
        template = _PostgresTemplates if vendor == "postgresql" else _SqliteTemplates
        store = template(connection, digest)
        if (rebuild and not made_in_run.exists()) or not store.exists():
            migrate(False)
            connection.close()
            if getattr(connection, "pool", None) is not None:
                connection.close_pool()  # its idle connections would keep the copy from starting
            store.keep(test_name)
            for earlier in made_in_run.parent.glob(f"quorum-test-template-{digest}.*"):
                if earlier.suffix != ".lock":
                    earlier.unlink(missing_ok=True)
            made_in_run.touch()
            return
        store.copy_to(test_name)
    migrate(True)


class _PostgresTemplates:
    def __init__(self, connection, digest: str) -> None:
        self.connection = connection
        self.name = f"{connection.settings_dict['NAME']}_template_{digest}"

    def _run(self, *statements: str) -> list[tuple]:
        with self.connection.creation._nodb_cursor() as cursor:
            rows: list[tuple] = []
            for statement in statements:
                cursor.execute(statement)
                if cursor.description:
                    rows += cursor.fetchall()
            return rows

    def exists(self) -> bool:
        rows = self._run(f"SELECT 1 FROM pg_database WHERE datname = '{self.name}'")  # noqa: S608
        return bool(rows)

    def keep(self, test_name: str) -> None:
        quote = self.connection.ops.quote_name
        prefix = self.name.rsplit("_", 1)[0]
        stale = self._run(
            f"SELECT datname FROM pg_database WHERE datname LIKE '{prefix}\\_%'"  # noqa: S608
        )
        making = f"{self.name}_making"
        self._run(
            *(f"DROP DATABASE IF EXISTS {quote(name)}" for (name,) in stale),
            f"CREATE DATABASE {quote(making)} TEMPLATE {quote(test_name)}",
            f"ALTER DATABASE {quote(making)} RENAME TO {quote(self.name)}",
        )

    def copy_to(self, test_name: str) -> None:
        quote = self.connection.ops.quote_name
        self._run(
            f"DROP DATABASE IF EXISTS {quote(test_name)} WITH (FORCE)",
            f"CREATE DATABASE {quote(test_name)} TEMPLATE {quote(self.name)}",
        )


class _SqliteTemplates:
    def __init__(self, connection, digest: str) -> None:
        test_name = Path(str(connection.creation._get_test_db_name()))
        self.folder = test_name.parent
        self.path = self.folder / f"test-template-{digest}.sqlite3"

    def exists(self) -> bool:
        return self.path.exists()

    def keep(self, test_name: str) -> None:
        for stale in self.folder.glob("test-template-*.sqlite3"):
            stale.unlink(missing_ok=True)
        _sqlite_copy(Path(test_name), self.path)

    def copy_to(self, test_name: str) -> None:
        target = Path(test_name)
        for leftover in ("", "-wal", "-shm", "-journal"):
            Path(f"{target}{leftover}").unlink(missing_ok=True)
        _sqlite_copy(self.path, target)


def _sqlite_copy(source: Path, target: Path) -> None:
    """Through SQLite's backup API (a write-ahead log included), into a temporary file renamed
    into place."""
    making = target.with_name(f".{target.name}.making")
    making.unlink(missing_ok=True)
    with sqlite3.connect(source) as src, sqlite3.connect(making) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    making.replace(target)
