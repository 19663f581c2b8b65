"""Pull requests, review spaces and rounds."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from reviews.domain.space_status import SpaceStatus, check_space_transition
from reviews.events import emit
from reviews.models import PullRequest, ReviewRound, ReviewSpace
from reviews.services.worktrees import worktrees_release_after_commit
from workspaces.models import Repository


def pull_request_upsert(
    *,
    repository: Repository,
    number: int | None = None,
    base_ref: str,
    head_ref: str,
    base_sha: str = "",
    head_sha: str = "",
    title: str = "",
    body: str = "",
    author: str = "",
) -> PullRequest:
    """Find the PR by its natural key (number, or the local ref pair) and refresh its fields."""
    key = (
        {"number": number}
        if number is not None
        else {"base_ref": base_ref, "head_ref": head_ref, "number": None}
    )
    fields = {
        "base_ref": base_ref,
        "head_ref": head_ref,
        "base_sha": base_sha,
        "head_sha": head_sha,
        "title": title[:300],
        "body": body,
        "author": author,
    }
    for _ in range(2):
        try:
            with transaction.atomic():
                pr, _ = PullRequest.objects.update_or_create(
                    repository=repository, **key, defaults=fields
                )
                return pr
        except IntegrityError:
            continue  # a concurrent insert won the race: the second pass updates its row
    raise RuntimeError("could not upsert the pull request")  # pragma: no cover


def space_get_or_create(*, pull_request: PullRequest) -> ReviewSpace:
    """The one path to a PR's review space, safe under concurrency (unique on pull_request)."""
    try:
        return ReviewSpace.objects.select_related("workspace").get(pull_request=pull_request)
    except ReviewSpace.DoesNotExist:
        pass
    try:
        with transaction.atomic():
            return ReviewSpace.objects.create(
                pull_request=pull_request, workspace_id=pull_request.repository.workspace_id
            )
    except IntegrityError:
        # Someone created it between our read and our insert: theirs is the space.
        return ReviewSpace.objects.select_related("workspace").get(pull_request=pull_request)


def space_transition(*, space: ReviewSpace, to: SpaceStatus) -> ReviewSpace:
    """The only writer of ReviewSpace.status."""
    with transaction.atomic():
        locked = ReviewSpace.objects.select_for_update().get(pk=space.pk)
        current = SpaceStatus(locked.status)
        if current is not to:
            check_space_transition(current, to)
            locked.status = to.value
            locked.save(update_fields=["status", "updated_at"])
            if to is SpaceStatus.COMPLETED:
                numbers = list(locked.rounds.values_list("number", flat=True))
                worktrees_release_after_commit(space_id=locked.pk, round_numbers=numbers)
            emit(locked.pk, "review.space_status", status=to.value)
    space.status = locked.status
    return locked


def round_start(
    *,
    space: ReviewSpace,
    head_sha: str,
    base_sha: str = "",
    tier: str,
    original_request: str = "",
) -> ReviewRound:
    """Open the next round. A round already open for the same head SHA is returned as is."""
    with transaction.atomic():
        locked = ReviewSpace.objects.select_for_update().get(pk=space.pk)
        latest = locked.rounds.order_by("-number").first()
        open_states = (ReviewRound.State.PENDING, ReviewRound.State.RUNNING)
        if latest is not None and latest.head_sha == head_sha and latest.state in open_states:
            return latest
        if latest is not None and latest.state in open_states:
            latest.state = ReviewRound.State.SUPERSEDED
            latest.finished_at = timezone.now()
            latest.save(update_fields=["state", "finished_at"])
            worktrees_release_after_commit(space_id=locked.pk, round_numbers=[latest.number])
        review_round = ReviewRound.objects.create(
            space=locked,
            number=(latest.number + 1) if latest else 1,
            head_sha=head_sha,
            base_sha=base_sha,
            tier=tier,
            original_request=original_request,
        )
        if locked.status != SpaceStatus.REQUESTED:
            space_transition(space=locked, to=SpaceStatus.REQUESTED)
        emit(locked.pk, "review.round_started", round=review_round.number)
    return review_round
