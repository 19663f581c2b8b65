"""Shared helpers for the code-index tests: index a commit, cohorts of a PR."""

from __future__ import annotations

from reviews.index import build_index, files_at_commit
from reviews.index.cohort_types import Cohort
from reviews.index.cohorts import compute_cohorts
from reviews.index.model import CodeIndex
from reviews.sources.git_local import LocalGitSource
from tests.fakes.gitrepo import GitRepo


def index_at(repo: GitRepo, ref: str) -> CodeIndex:
    return build_index(files_at_commit(LocalGitSource(repo.path), ref))


def pr_cohorts(
    repo: GitRepo, base: str, head: str, *, with_base: bool = True
) -> tuple[Cohort, ...]:
    """Cohorts of the pull request `head` into `base`, as the review pipeline would compute them."""
    source = LocalGitSource(repo.path)
    diff = source.diff(base, head)
    head_index = index_at(repo, diff.head_sha)
    base_index = index_at(repo, diff.merge_base_sha) if with_base else None
    return compute_cohorts(diff.files, head_index, base=base_index)


def edges_of(index: CodeIndex, kind: str | None = None) -> set[tuple[str, str]]:
    return {
        (r.source, r.target)
        for r in index.references
        if r.target is not None and (kind is None or r.kind == kind)
    }
