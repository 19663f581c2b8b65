"""What a round's reviewers read: the pull request's diff, the checked-out head, and the
changed files' text and line counts (paths confined to the checkout)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reviews.models import ReviewRound
from reviews.services.github import github_client
from reviews.services.worktrees import round_worktree
from reviews.sources.git_local import LocalGitSource
from reviews.sources.worktrees import UnsafePath, safe_join


def fetch_diff(review_round: ReviewRound) -> str:
    pr = review_round.space.pull_request
    repo = pr.repository
    if repo.kind == repo.Kind.LOCAL:
        source = LocalGitSource(repo.local_path)
        return source.pull_diff_text(review_round.base_sha or pr.base_ref, review_round.head_sha)

    if pr.number is None:
        raise ValueError(f"{pr} is on GitHub but has no pull request number")
    owner, name = repo.full_name.split("/", 1)
    with github_client() as client:
        return client.get_pull_diff(owner, name, pr.number)


def round_worktree_ready(review_round: ReviewRound) -> Path:
    return round_worktree(review_round=review_round)


def line_counter(root: Path) -> Callable[[str], int | None]:
    cache: dict[str, int | None] = {}

    def count(path: str) -> int | None:
        if path not in cache:
            try:
                target = safe_join(root, path)
                cache[path] = (
                    len(target.read_text(errors="replace").splitlines())
                    if target.is_file()
                    else None
                )
            except (UnsafePath, OSError):
                cache[path] = None
        return cache[path]

    return count


def file_text(root: Path) -> Callable[[str], list[str] | None]:
    def read(path: str) -> list[str] | None:
        try:
            return safe_join(root, path).read_text(errors="replace").splitlines()
        except (UnsafePath, OSError):
            return None

    return read
