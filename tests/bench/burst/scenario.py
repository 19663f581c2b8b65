"""What the stack talks to: the strict fake GitHub serving one repository with a pull request
per webhook, and the fake model answering every call after a fixed latency with the scripted
reviewers of the sample repository (tests/reviews/pipeline_scenarios.py).

Each pull request's head is the sample repository's feature branch plus one Markdown file of
its own, so every round fetches, checks out and indexes a commit no other round has seen, and
every round's findings are the same (the file is no code). A push adds another such file."""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from reviews.sources.sample_repo import create_sample_repository
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import FakeModelServer
from tests.reviews import pipeline_scenarios

OWNER, NAME = "acme", "shop"
TOKEN = "ghs_bench_burst_token"
WEBHOOK_SECRET = "bench-burst-webhook-secret"


class FixedLatencyModel(FakeModelServer):
    """The fake model with every answer taking at least `latency` seconds, whatever the script."""

    latency = 0.0

    def _sleep(self, seconds: float) -> None:
        super()._sleep(max(seconds, self.latency))


@dataclass
class Fakes:
    github: FakeGitHub
    model: FixedLatencyModel
    repo: Path
    revisions: dict[int, int] = field(default_factory=dict)  # pull number → pushes so far
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def stop(self) -> None:
        self.model.stop()
        self.github.stop()

    def add_pull(self, number: int) -> None:
        self._commit(number)
        self.github.add_pull(
            OWNER,
            NAME,
            number,
            base="main",
            head=f"pr-{number}",
            author="dev",
            body=None,
            title=f"Product search, take {number}",
        )

    def push(self, number: int) -> str:
        """A new commit on the pull request's branch; returns its SHA."""
        return self._commit(number)

    def _commit(self, number: int) -> str:
        """One commit on `pr-<number>` adding a Markdown file, with plumbing only: the
        repository's work tree and index are never touched while the fake serves it."""
        with self._lock:
            revision = self.revisions.get(number, -1) + 1
            self.revisions[number] = revision
            parent = "feature/search" if revision == 0 else f"pr-{number}"
            index_file = self.repo.parent / f"index-{number}-{revision}"
            index = {"GIT_INDEX_FILE": str(index_file)}
            _git(self.repo, "read-tree", parent, env=index)
            text = f"# Notes {number}.{revision}\n\nNothing to review here.\n"
            blob = _git(self.repo, "hash-object", "-w", "--stdin", stdin=text)
            entry = f"100644,{blob},docs/pr-{number}-{revision}.md"
            _git(self.repo, "update-index", "--add", "--cacheinfo", entry, env=index)
            tree = _git(self.repo, "write-tree", env=index)
            index_file.unlink()
            message = f"Notes for pull request {number}, revision {revision}"
            sha = _git(self.repo, "commit-tree", tree, "-p", parent, "-m", message)
            _git(self.repo, "update-ref", f"refs/heads/pr-{number}", sha)
            return sha


def _git(repo: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> str:
    identity = {
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
    }
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        input=stdin.encode(),
        capture_output=True,
        env={**os.environ, **identity, **(env or {}), "LC_ALL": "C"},
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode().strip()


def fakes_start(scratch: Path, pulls: list[int], latency: float) -> Fakes:
    repo = scratch / "repos" / NAME
    create_sample_repository(repo)
    github = FakeGitHub().start()
    model = FixedLatencyModel()
    model.latency = latency
    model.start()
    fakes = Fakes(github, model, repo)
    try:
        github.add_token(TOKEN, login="quorum-bot")
        github.add_repo(OWNER, NAME, repo)
        pipeline_scenarios.install(model)
        for number in pulls:
            fakes.add_pull(number)
    except BaseException:
        fakes.stop()
        raise
    return fakes


def fakes_env(fakes: Fakes) -> dict[str, str]:
    """What the stack's processes need to reach the fakes."""
    return {
        "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "GITHUB_API_URL": fakes.github.base_url,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_APP_ID": "",
        "GITHUB_APP_PRIVATE_KEY_PATH": "",
        **pipeline_scenarios.model_env(fakes.model),
    }
