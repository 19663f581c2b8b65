"""Code index, cohorts and deterministic axes for a round.

Local repositories: the index is built at the base commit (or reused from an earlier round)
and updated for the changed files only. GitHub repositories: the index is built in the round's
worktree at the head (and reused for the same head); the API contract fetches the base into
that worktree and compares the merge base with the head, as for a local repository.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from reviews.domain import types as t
from reviews.domain.axes import clearing_steps
from reviews.index import (
    CodeIndex,
    build_index,
    changed_texts,
    compute_cohorts,
    files_at_commit,
    files_in_directory,
    update_index,
)
from reviews.index.axes_compute import (
    CohortPaths,
    compute_api_contract,
    compute_test_gap,
    contract_file,
)
from reviews.index.cohort_types import Cohort, cohorts_to_json
from reviews.models import CodeIndexRecord, ReviewRound
from reviews.services.round_files import round_changed_files
from reviews.services.worktrees import round_remote_merge_base
from reviews.sources.diffs import ChangedFile, parse_unified_diff
from reviews.sources.git_local import GitError, LocalGitSource
from reviews.sources.gitcmd import run_git
from reviews.sources.github_errors import GitHubError
from workspaces.models import Repository

log = logging.getLogger(__name__)

#: A round's checkout, or a call that returns it once it is made (it may still be under way).
Worktree = Path | Callable[[], Path]


def _stored(repository: Repository, *shas: str) -> dict[str, CodeIndex]:
    """The indexes stored for `shas` (one read for all), by commit; one of an older format is
    dropped, so the caller builds it again."""
    records = CodeIndexRecord.objects.filter(repository=repository, commit_sha__in=set(shas))
    found: dict[str, CodeIndex] = {}
    for record in records:
        try:
            found[record.commit_sha] = CodeIndex.from_json(record.data)
        except ValueError:  # stored by an older format: built again, and stored anew
            record.delete()
    return found


def _store(repository: Repository, built: dict[str, CodeIndex]) -> None:
    """Store the indexes just built, in one insert; one a concurrent round stored first is
    kept (the same commit gives the same index)."""
    CodeIndexRecord.objects.bulk_create(
        [
            CodeIndexRecord(
                repository=repository,
                commit_sha=sha,
                indexed=index.indexed,
                reason=(index.reason or "")[:300],
                data=index.to_json(),
            )
            for sha, index in built.items()
        ],
        ignore_conflicts=True,
    )


def round_indexes(
    review_round: ReviewRound, worktree: Worktree, files: Sequence[ChangedFile]
) -> tuple[CodeIndex | None, CodeIndex | None]:
    """(base, head) indexes; base is None for GitHub rounds. `files`: the round's diff.
    `worktree`: the checkout, or a call that waits for it; a local repository's indexes are
    read from git and never wait for it."""
    repository = review_round.space.pull_request.repository
    head_sha = review_round.head_sha
    if repository.kind == Repository.Kind.LOCAL:
        source = LocalGitSource(repository.local_path)
        base_ref = review_round.base_sha or review_round.space.pull_request.base_ref
        merge_base = source.merge_base(base_ref, head_sha)
        stored = _stored(repository, head_sha, merge_base)
        head, base = stored.get(head_sha), stored.get(merge_base)
        built: dict[str, CodeIndex] = {}
        if base is None:
            base = built[merge_base] = build_index(files_at_commit(source, merge_base))
        if head is None:
            # Only what the change touched is parsed again.
            head = built[head_sha] = (
                update_index(base, changed_texts(source, head_sha, files))
                if base.indexed
                else build_index(files_at_commit(source, head_sha))
            )
        if built:
            _store(repository, built)
        return base, head
    head = _stored(repository, head_sha).get(head_sha)
    if head is None:
        head = build_index(files_in_directory(worktree() if callable(worktree) else worktree))
        _store(repository, {head_sha: head})
    return None, head


def round_cohorts(
    review_round: ReviewRound,
    worktree: Worktree,
    *,
    seconds: dict[str, float] | None = None,
    files: Sequence[ChangedFile] | None = None,
) -> tuple[Cohort, ...]:
    """Cohorts ranked by blast radius; grouped by path, and labelled so, without an index.
    `seconds`, if given, receives how long the indexes and the cohorts took; `files`: the
    round's changed files when the caller has read them (round_changed_files)."""
    started = time.perf_counter()
    files = round_changed_files(review_round) if files is None else files
    base, head = indexes_or_none(review_round, worktree, files)
    indexed = time.perf_counter()
    cohorts = compute_cohorts(files, head, base=base)
    if seconds is not None:
        seconds["index"] = indexed - started
        seconds["cohorts"] = time.perf_counter() - indexed
    return cohorts


def indexes_or_none(
    review_round: ReviewRound, worktree: Worktree, files: Sequence[ChangedFile]
) -> tuple[CodeIndex | None, CodeIndex | None]:
    """round_indexes, or (None, None) when git or the checkout cannot be read: the cohorts
    are then grouped by path."""
    try:
        return round_indexes(review_round, worktree, files)
    except (GitError, OSError) as exc:
        log.warning("round %s: no code index (%s); grouping by path", review_round.pk, exc)
        return None, None


def cohorts_json(cohorts: tuple[Cohort, ...]) -> list[dict[str, Any]]:
    return cohorts_to_json(cohorts)


def last_release(source: LocalGitSource, commit: str) -> str:
    """The newest tag reachable from `commit`, read offline from the repository; "" when it
    has none (then nothing is known about releases and every name counts as released)."""

    try:
        found = run_git(["describe", "--tags", "--abbrev=0", commit], cwd=source.repo_path)
    except GitError:
        return ""
    return found.stdout.decode("utf-8", "replace").strip()


def api_contract(review_round: ReviewRound) -> tuple[t.AxisResult, dict[str, Any]]:
    """Base (the merge base, as the pull request's diff) vs head, for local repositories and
    GitHub pull requests alike; GitHub rounds fetch the base into the round's checkout."""
    repository = review_round.space.pull_request.repository
    files = parse_unified_diff(review_round.diff)
    changed = {p for f in files for p in (f.old_path, f.new_path) if p}
    try:
        if repository.kind == Repository.Kind.LOCAL:
            source = LocalGitSource(repository.local_path)
            base_ref = review_round.base_sha or review_round.space.pull_request.base_ref
            merge_base = source.merge_base(base_ref, review_round.head_sha)
        else:
            worktree, merge_base = round_remote_merge_base(review_round=review_round)
            source = LocalGitSource(worktree)
        base_files = files_at_commit(source, merge_base, include=contract_file)
        head_files = files_at_commit(source, review_round.head_sha, include=contract_file)
        release = last_release(source, merge_base)
        released_files = (
            files_at_commit(source, release, include=contract_file) if release else None
        )
    except (GitError, GitHubError, ImproperlyConfigured, ValueError) as exc:
        reason = f"could not read the base and head commits: {exc}"
        return t.AxisResult.UNAVAILABLE, {
            "reason": reason,
            "to_clear": clearing_steps(t.AxisName.API_CONTRACT, t.AxisResult.UNAVAILABLE),
        }
    result, details = compute_api_contract(
        base_files=base_files,
        head_files=head_files,
        changed=changed,
        hold_unreadable=review_round.space.workspace.hold_unreadable_languages,
        released_files=released_files,
        release=release,
    )
    return result, {**details, "base": merge_base, "head": review_round.head_sha}


def test_gap(cohorts: Sequence[CohortPaths], findings) -> tuple[t.AxisResult, dict[str, Any]]:
    return compute_test_gap(cohorts, findings)
