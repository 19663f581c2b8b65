"""Pull requests, review spaces and rounds."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import CharField, Exists, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from guardrails.models import ApprovalRequest
from reviews.domain.space_status import (
    ClosedReason,
    SpaceFacts,
    SpaceStatus,
    publish_facts_matter,
    space_status,
)
from reviews.live.events import emit
from reviews.models import PublishRecord, PullRequest, ReviewRound, ReviewSpace
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


#: Approval states in which a publish request is still on its way to GitHub.
_PUBLISH_OPEN = ("pending", "approved", "executing")


def publish_requests_open(space_id: Any, round_number: Any) -> QuerySet:
    """The space's publish requests still on their way for its round `round_number` (values
    or outer references). One for an older round never holds the newest one back: it cannot
    post any more (its round is not current), even while stuck executing until the sweeper
    settles it."""

    return (
        ApprovalRequest.objects.filter(
            action_class="prPublish",
            target_type="reviewspace",
            target_id=space_id,
            status__in=_PUBLISH_OPEN,
        )
        .annotate(for_round=Cast(KT("payload__round"), IntegerField()))
        .filter(for_round=round_number)
    )


def space_facts(space: ReviewSpace) -> SpaceFacts:

    # The newest round's id, number and state only (not its diff).
    newest = space.rounds.order_by("-number").values_list("pk", "number", "state").first()
    newest_id, number, state = newest if newest else (None, None, None)
    if not publish_facts_matter(newest_round=state, closed_reason=space.closed_reason):
        return SpaceFacts(newest_round=state, closed_reason=space.closed_reason)
    return SpaceFacts(
        newest_round=state,
        publish_pending=publish_requests_open(str(space.pk), number).exists(),
        newest_published=newest_id is not None
        and PublishRecord.objects.filter(
            round_id=newest_id, state=PublishRecord.State.POSTED, legacy_duplicate=False
        ).exists(),
        closed_reason=space.closed_reason,
    )


def space_lock_for_move(
    space_id: int, *, round_id: int, to: str
) -> tuple[ReviewSpace, SpaceFacts | None] | None:
    """The space locked for the move of its round `round_id` to state `to`, read in the same
    statement with the facts its status is decided from, as they stand once the move is
    written (under this lock no other round of the space moves): one statement where the
    lock and `space_facts` take two to four. The facts are None when a fact it did not read
    matters (the newest round is another, ended one): `space_facts` reads them then."""

    newest = ReviewRound.objects.filter(space=OuterRef("pk")).order_by("-number")
    rows = (
        ReviewSpace.objects.select_for_update()
        .filter(pk=space_id)
        .annotate(
            newest_id=Subquery(newest.values("pk")[:1]),
            newest_state=Subquery(newest.values("state")[:1]),
            newest_number=Subquery(newest.values("number")[:1]),
        )
    )
    publish = publish_facts_matter(newest_round=to, closed_reason="")
    if publish:
        rows = rows.annotate(
            publish_pending=Exists(
                publish_requests_open(Cast(OuterRef("pk"), CharField()), OuterRef("newest_number"))
            ),
            newest_published=Exists(
                PublishRecord.objects.filter(
                    round_id=OuterRef("newest_id"),
                    state=PublishRecord.State.POSTED,
                    legacy_duplicate=False,
                )
            ),
        )
    row = rows.first()
    if row is None:
        return None
    state = to if row.newest_id == round_id else row.newest_state
    if not publish_facts_matter(newest_round=state, closed_reason=row.closed_reason):
        return row, SpaceFacts(newest_round=state, closed_reason=row.closed_reason)
    if not publish or row.newest_id != round_id:
        return row, None
    return row, SpaceFacts(
        newest_round=state,
        publish_pending=bool(getattr(row, "publish_pending")),  # noqa: B009 (annotated)
        newest_published=bool(getattr(row, "newest_published")),  # noqa: B009
        closed_reason=row.closed_reason,
    )


def space_status_refresh(
    *, space: ReviewSpace | int, locked: bool = False, facts: SpaceFacts | None = None
) -> ReviewSpace:
    """The only writer of ReviewSpace.status: the status its facts decide
    (reviews/domain/space_status.py). Call it after any fact changes; it is cheap and
    idempotent, and tells the page only when the status really changed. `locked`: `space` is
    the row the caller read under its lock in the transaction it is in (not read again);
    `facts`: its facts, read with that lock (`space_lock_for_move`)."""
    if locked:
        assert isinstance(space, ReviewSpace) and transaction.get_connection().in_atomic_block
    space_id = space if isinstance(space, int) else space.pk
    with nullcontext() if locked else transaction.atomic():
        row = space if locked else ReviewSpace.objects.select_for_update().get(pk=space_id)
        assert isinstance(row, ReviewSpace)
        status = space_status(facts if locked and facts is not None else space_facts(row))
        if row.status != status.value:
            row.status = status.value
            row.save(update_fields=["status", "updated_at"])
            if status is SpaceStatus.COMPLETED:
                numbers = list(row.rounds.values_list("number", flat=True))
                worktrees_release_after_commit(space_id=row.pk, round_numbers=numbers)
            emit(row.pk, "review.space_status", status=status.value)
    if not isinstance(space, int):
        space.status = row.status
    return row


def space_close(
    *, space: ReviewSpace, reason: ClosedReason, note: str = "", actor=None
) -> ReviewSpace:
    """The review ended without (another) publish: the PR was merged or closed, or a person
    marked it done (with a reason)."""
    if reason is ClosedReason.DONE and not note.strip():
        raise ValueError("Say why the review is done: the reason is kept with it.")
    ReviewSpace.objects.filter(pk=space.pk).update(
        closed_reason=reason.value,
        closed_note=note.strip()[:2000],
        closed_by=actor if getattr(actor, "pk", None) else None,
        closed_at=timezone.now(),
    )
    return space_status_refresh(space=space)


def space_reopen(*, space: ReviewSpace) -> None:
    """A new round (a push, a reopened PR) makes the review live again."""
    ReviewSpace.objects.filter(pk=space.pk).exclude(closed_reason="").update(
        closed_reason="", closed_note="", closed_by=None, closed_at=None
    )
