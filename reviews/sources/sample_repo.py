"""A small sample repository with a feature branch containing real defects (for `make demo`).

The defects are the kind reviewers should catch: SQL built from user input, a swallowed
exception, a missing permission check and a secret committed in code.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

BASE_FILES = {
    "README.md": "# Shop\n\nA tiny shop service used to demonstrate Quorum.\n",
    "shop/__init__.py": "",
    "shop/db.py": '''"""Database helpers."""

import sqlite3


def connect(path="shop.db"):
    return sqlite3.connect(path)
''',
    "shop/orders.py": '''"""Order lookups."""

from shop.db import connect


def order_total(order_id):
    with connect() as conn:
        row = conn.execute("SELECT total FROM orders WHERE id = ?", (order_id,)).fetchone()
    return row[0] if row else 0
''',
    "shop/views.py": '''"""HTTP handlers."""

from shop.orders import order_total


def total_view(request, order_id):
    if not request.user.can_view(order_id):
        return 403, "forbidden"
    return 200, str(order_total(order_id))
''',
}

FEATURE_FILES = {
    "shop/search.py": '''"""Product search."""

import subprocess

from shop.db import connect

API_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


def search_products(term):
    with connect() as conn:
        query = "SELECT id, name FROM products WHERE name LIKE '%%%s%%'" % term
        return conn.execute(query).fetchall()


def export_products(filename):
    try:
        subprocess.call("tar czf %s products/" % filename, shell=True)
    except Exception:
        pass
''',
    "shop/views.py": '''"""HTTP handlers."""

from shop.orders import order_total
from shop.search import search_products


def total_view(request, order_id):
    if not request.user.can_view(order_id):
        return 403, "forbidden"
    return 200, str(order_total(order_id))


def delete_order_view(request, order_id):
    from shop.db import connect

    with connect() as conn:
        conn.execute("DELETE FROM orders WHERE id = ?", (order_id,))
    return 204, ""


def search_view(request):
    return 200, search_products(request.GET["q"])
''',
}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    result = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Quorum Demo",
            "-c",
            "user.email=demo@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip()


def _write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def create_sample_repository(path: Path) -> tuple[str, str]:
    """Create (or reuse) the sample repository; returns the base and head branch names."""
    if (path / ".git").exists():
        return "main", "feature/search"
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    _write(path, BASE_FILES)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "Shop: orders and totals")
    _git(path, "checkout", "-q", "-b", "feature/search")
    _write(path, FEATURE_FILES)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "Add product search, export and order deletion")
    _git(path, "checkout", "-q", "main")
    return "main", "feature/search"
