"""`manage.py review` as a newcomer runs it: a fresh data directory, no `migrate`, no services.

Each review runs in its own process on the embedded default, exactly as typed in a shell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reviews.sources.sample_repo import create_sample_repository

ROOT = Path(__file__).resolve().parents[2]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def _review(var_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL"} and not key.startswith("QUORUM_LLM")
    }
    env.update(QUORUM_VAR_DIR=str(var_dir), SECRET_KEY="test-only-not-a-secret")
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "review", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_it_reviews_twice_on_a_fresh_data_directory_and_leaves_nothing_behind(tmp_path):
    """No `migrate` first; afterwards no checkout remains and the reviewed repository's own
    worktree list is what it was."""
    repo = tmp_path / "shop"
    base, head = create_sample_repository(repo)
    worktrees_before = _git(repo, "worktree", "list", "--porcelain")
    var_dir = tmp_path / "var"

    runs = []
    for _ in range(2):
        done = _review(var_dir, str(repo), "--base", base, "--head", head, "--format", "json")
        assert done.returncode in (0, 3, 4), done.stderr
        assert "Traceback" not in done.stderr
        review = json.loads(done.stdout)
        assert review["verdict"]["level"] in ("ship", "hold", "block")
        runs.append(done.stderr)

    assert "preparing the embedded database" in runs[0]
    assert "preparing the embedded database" not in runs[1]
    assert _git(repo, "worktree", "list", "--porcelain") == worktrees_before
    assert not (repo / ".git" / "worktrees").exists()
    leftovers = [p for p in (var_dir / "worktrees").rglob("*") if p.name != ".locks"]
    assert [p for p in leftovers if ".locks" not in p.parts] == []


def test_a_file_missing_from_a_partial_clone_is_listed_as_not_read(tmp_path):
    """A blob the clone never fetched (a large image) does not fail the review."""
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    _git(origin, "config", "user.email", "dev@example.com")
    _git(origin, "config", "user.name", "Dev")
    _git(origin, "config", "uploadpack.allowFilter", "true")
    (origin / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (origin / "logo.png").write_bytes(os.urandom(50_000))
    _git(origin, "add", ".")
    _git(origin, "commit", "-qm", "base")
    _git(origin, "checkout", "-qb", "feature")
    (origin / "calc.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    _git(origin, "commit", "-qam", "sub")
    clone = tmp_path / "clone"
    _git(
        tmp_path,
        "clone",
        "-q",
        "--filter=blob:limit=1k",
        "--no-checkout",
        f"file://{origin}",
        str(clone),
    )
    # The promisor is gone, as on an offline machine: the image's content cannot be had.
    _git(clone, "remote", "set-url", "origin", f"file://{tmp_path}/gone")
    missing = _git(clone, "rev-list", "--objects", "--missing=print", "origin/feature")
    assert any(line.startswith("?") for line in missing.splitlines())

    done = _review(
        tmp_path / "var", str(clone), "--base", "origin/main", "--head", "origin/feature"
    )

    assert done.returncode in (0, 3, 4), done.stderr
    assert "Not read: `logo.png`" in done.stdout
    assert "## Walkthrough" in done.stdout and "calc.py" in done.stdout


def test_help_shows_examples():
    done = _review(Path("/nonexistent-var"), "--help")
    assert done.returncode == 0
    assert "examples:" in done.stdout
    assert "--base main --head my-branch" in done.stdout


@pytest.mark.parametrize("args", [["--head", "x"]])
def test_a_directory_that_is_no_repository_is_refused_with_a_message(tmp_path, args):
    done = _review(tmp_path / "var", str(tmp_path), *args)
    assert done.returncode == 1
    assert "neither a git repository nor a GitHub pull request URL" in done.stderr
    assert "Traceback" not in done.stderr
