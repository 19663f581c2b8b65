"""git for the benchmarks' scratch repositories: a fixed identity, no hooks, no signing."""

from __future__ import annotations

import subprocess
from pathlib import Path

_GIT = (
    "git",
    "-c",
    "user.name=Quorum Bench",
    "-c",
    "user.email=bench@quorum.invalid",
    "-c",
    "init.defaultBranch=main",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
)


def git(repo: Path, *args: str) -> str:
    out = subprocess.run([*_GIT, *args], cwd=repo, check=True, capture_output=True)
    return out.stdout.decode().strip()
