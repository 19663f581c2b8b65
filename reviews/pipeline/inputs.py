"""What a round's reviewers read: the pull request's diff, the checked-out head, and the
changed files' text and line counts (paths confined to the checkout)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reviews.models import ReviewRound
from reviews.services.github import github_client
from reviews.services.worktrees import round_worktree, worktree_manager
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


def round_worktree_begun(review_round: ReviewRound) -> Callable[[], Path]:
    """The round's checkout, begun now; the call returned waits for it (and raises what making
    it raised). A local repository's is made on a thread: git does the work in processes of
    its own, on another core, while prepare builds the code index, which reads git rather than
    the checkout. The thread is handed plain values, never the database. A GitHub
    repository's is made here, before returning (the index is read from it)."""
    repo = review_round.space.pull_request.repository
    if repo.kind != repo.Kind.LOCAL:
        path = round_worktree_ready(review_round)
        return lambda: path
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quorum-checkout")
    made = pool.submit(
        worktree_manager().ensure_local,
        review_round.space_id,
        review_round.number,
        repo=repo.local_path,
        sha=review_round.head_sha,
    )
    pool.shutdown(wait=False)
    return made.result


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
