"""The round's isolated checkout: created once, shared by every reviewer."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction

from reviews.domain.round_states import RoundState
from reviews.models import ReviewRound
from reviews.services.github import github_client
from reviews.sources.worktrees import WorktreeManager

log = logging.getLogger(__name__)


def worktree_manager() -> WorktreeManager:
    # The root comes from settings only; no part of the path is taken from user input.
    return WorktreeManager(settings.QUORUM_WORKTREE_ROOT)


def round_worktree(*, review_round: ReviewRound) -> Path:
    space = review_round.space
    repo = space.pull_request.repository
    manager = worktree_manager()
    if repo.kind == repo.Kind.LOCAL:
        return manager.ensure_local(
            space.pk, review_round.number, repo=repo.local_path, sha=review_round.head_sha
        )
    owner, name = repo.full_name.split("/", 1)
    with github_client() as client:
        remote = client.git_remote(owner, name)
    return manager.ensure_remote(
        space.pk,
        review_round.number,
        url=remote.url,
        sha=review_round.head_sha,
        auth_header=remote.auth_header,
    )


def round_remote_merge_base(*, review_round: ReviewRound) -> tuple[Path, str]:
    """A GitHub round's checkout with its base fetched too: (checkout, merge base of the base
    and head commits). The merge base is what GitHub diffs a pull request against."""
    space = review_round.space
    repo = space.pull_request.repository
    base_sha = review_round.base_sha or space.pull_request.base_sha
    path = round_worktree(review_round=review_round)
    owner, name = repo.full_name.split("/", 1)
    with github_client() as client:
        remote = client.git_remote(owner, name)
    merge_base = worktree_manager().ensure_remote_base(
        space.pk,
        review_round.number,
        url=remote.url,
        base_sha=base_sha,
        head_sha=review_round.head_sha,
        auth_header=remote.auth_header,
    )
    return path, merge_base


def worktrees_release_after_commit(*, space_id: int, round_numbers: list[int]) -> None:
    """Remove checkouts of superseded or completed rounds once the change is committed."""

    def release() -> None:
        manager = worktree_manager()
        for number in round_numbers:
            try:
                manager.cleanup(space_id, number)
            except Exception:  # a leftover directory is untidy, never a reason to fail
                log.exception("could not remove worktree %s/%s", space_id, number)

    transaction.on_commit(release)


def worktrees_release_earlier(*, review_round: ReviewRound) -> list[int]:
    """A round just finished (in the caller's transaction): the checkouts of the space's
    earlier rounds that have ended go once it commits. Their heads are no longer what the pull
    request's verdict is about; a round still open keeps its checkout, and so does the round
    that finished. A reader that needs an earlier round's code later (a question on one of its
    findings) checks it out again (`round_worktree` makes what is missing). Returns the round
    numbers released."""
    if review_round.number <= 1:
        return []  # a space's first round (rounds count from 1): nothing earlier to release
    numbers = list(
        ReviewRound.objects.filter(
            space_id=review_round.space_id,
            number__lt=review_round.number,
            state__in=[s.value for s in RoundState if s.terminal],
        ).values_list("number", flat=True)
    )
    if numbers:
        worktrees_release_after_commit(space_id=review_round.space_id, round_numbers=numbers)
    return numbers
