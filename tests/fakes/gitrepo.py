"""Scripted git repositories for tests: real `git`, fixed identity, branch `main`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

_IDENTITY = (
    "-c",
    "user.name=Quorum Test",
    "-c",
    "user.email=test@quorum.invalid",
    "-c",
    "init.defaultBranch=main",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
)


def git(*args: str, cwd: Path | str | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    proc = subprocess.run(
        ["git", *_IDENTITY, *args], cwd=cwd, env=env, capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", "replace")


class GitRepo:
    """A working repository; `commit` writes files (None deletes) and commits on a branch."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def init(cls, path: Path) -> GitRepo:
        path.mkdir(parents=True, exist_ok=True)
        git("init", "--quiet", str(path))
        return cls(path)

    def git(self, *args: str) -> str:
        return git(*args, cwd=self.path)

    def sha(self, ref: str = "HEAD") -> str:
        return self.git("rev-parse", "--verify", f"{ref}^{{commit}}").strip()

    def current_branch(self) -> str:
        return self.git("symbolic-ref", "--short", "-q", "HEAD").strip()

    def checkout(self, branch: str, *, create_from: str | None = None) -> None:
        if create_from is not None:
            self.git("checkout", "--quiet", "-b", branch, create_from)
        else:
            self.git("checkout", "--quiet", branch)

    def write(self, files: Mapping[str, str | bytes | None]) -> None:
        for rel, content in files.items():
            target = self.path / rel
            if content is None:
                self.git("rm", "--quiet", "--", rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_bytes(content.encode("utf-8"))
            self.git("add", "--", rel)

    def rename(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", "--", old, new)

    def commit(
        self,
        message: str,
        files: Mapping[str, str | bytes | None] | None = None,
        *,
        branch: str | None = None,
    ) -> str:
        """Commit `files` on `branch` (created from HEAD if new); returns the new SHA."""
        if branch is not None and self.current_branch() != branch:
            if self.git("branch", "--list", branch).strip():
                self.checkout(branch)
            else:
                self.checkout(branch, create_from="HEAD")
        if files:
            self.write(files)
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.sha()
