"""What the reviews app does when the workspaces app disconnects a repository or deletes its
reviews for good: registered at start-up (reviews/apps.py), called through workspaces/hooks.py.

Here because the workspaces app sits below reviews and may not import the rounds service or
the review actions' approvals; reviews hands it these two functions instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from guardrails.services.approvals import approvals_cancel_for
from reviews.models import ReviewRound
from reviews.services.rounds import RoundError, round_cancel
from workspaces.hooks import repository_listeners_set
from workspaces.models import Repository, Workspace


def repository_rounds_cancel(*, repository: Repository, actor: Any, request: Any) -> int:
    """Cancel the disconnected repository's open rounds, so nothing keeps writing to a review
    nobody can act on. Returns how many were cancelled."""
    open_rounds = ReviewRound.objects.filter(
        space__pull_request__repository=repository,
        state__in=[ReviewRound.State.PENDING, ReviewRound.State.RUNNING],
    ).select_related("space__workspace", "space__pull_request")
    cancelled = 0
    for review_round in open_rounds:
        try:
            round_cancel(review_round=review_round, actor=actor, request=request)
        except RoundError:  # it ended on its own meanwhile
            continue
        cancelled += 1
    return cancelled


def space_approvals_cancel(
    *, workspace: Workspace, space_ids: Sequence[int], why: str, actor: Any
) -> int:
    """Cancel the open approval requests acting on review spaces deleted for good."""
    return approvals_cancel_for(
        workspace=workspace,
        target_type="reviewspace",
        target_ids=[str(pk) for pk in space_ids],
        why=why,
        actor=actor,
    )


def repository_listeners_register() -> None:
    repository_listeners_set(
        rounds_cancel=repository_rounds_cancel, approvals_cancel=space_approvals_cancel
    )
