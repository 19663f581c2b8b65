"""Flagging a review for a person, and a person clearing the flag (reviews/domain/flagging.py).

The flag is raised by `space_flag_check`, called when a round finishes and whenever a round's
verdict is decided again; nothing but a person (`space_flag_clear`) lowers it.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from guardrails.audit import SYSTEM, Actor, Target, audit_record
from reviews.domain.flagging import flag_reason
from reviews.live.events import emit, emit_list_row
from reviews.models import ReviewRound, ReviewSpace


class FlagError(ApplicationError):
    """The flag cannot be changed that way; the message says why."""

    code = ErrorCode.FLAG_CONFLICT
    http_status = 409


def _finished_outcomes(space: ReviewSpace) -> list[tuple[int, str]]:
    return list(
        ReviewRound.objects.filter(
            space=space, state=ReviewRound.State.FINISHED, verdict__isnull=False
        ).values_list("number", "verdict__level")
    )


def space_flag_check(*, space: ReviewSpace | int, locked: bool = False) -> bool:
    """Flag the review for a person when its rounds keep ending without approval. Idempotent;
    never lowers the flag. Returns True when this call raised it. `locked`: `space` is the row
    the caller read under its lock in the transaction it is in (the finaliser's, whose move of
    the round to finished locked it), not read again."""
    if locked:
        assert isinstance(space, ReviewSpace) and transaction.get_connection().in_atomic_block
    space_id = space if isinstance(space, int) else space.pk
    # No savepoint inside the finaliser's transaction: a failure here fails it whole anyway.
    with transaction.atomic(savepoint=False):
        row = (
            space
            if locked and isinstance(space, ReviewSpace)
            else ReviewSpace.objects.select_for_update(of=("self",))
            .select_related("workspace", "pull_request")
            .get(pk=space_id)
        )
        if row.flagged_for_human:
            return False
        outcomes = _finished_outcomes(row)
        reason = flag_reason(outcomes, seen_through=row.flag_seen_through)
        if reason is None:
            return False
        row.flagged_for_human = True
        row.flagged_at, row.flag_reason = timezone.now(), reason
        row.save(update_fields=["flagged_for_human", "flagged_at", "flag_reason", "updated_at"])
        audit_record(
            action="review.flagged_for_human",
            actor=SYSTEM,
            workspace=row.workspace,
            target=Target("reviewspace", str(row.pk), str(row.pull_request)),
            payload={
                "reason": reason,
                "rounds": [{"round": n, "verdict": level} for n, level in sorted(outcomes)],
            },
        )
        emit(row.pk, "review.space_status", status=row.status, flagged=True)
        emit_list_row(row.workspace_id, row.pk)
    return True


def space_flag_clear(
    *, space: ReviewSpace, actor: Any, note: str = "", request: Any = None
) -> ReviewSpace:
    """A person has looked: lower the flag (audited with who cleared it). The rounds seen so far
    do not count again; another two rounds without approval raise it again."""
    with transaction.atomic(durable=True):
        locked = (
            ReviewSpace.objects.select_for_update(of=("self",))
            .select_related("workspace", "pull_request")
            .get(pk=space.pk)
        )
        if not locked.flagged_for_human:
            raise FlagError("This review is not flagged for a person: there is nothing to clear.")
        seen = max((n for n, _ in _finished_outcomes(locked)), default=0)
        was = {
            "reason": locked.flag_reason,
            "flagged_at": locked.flagged_at.isoformat() if locked.flagged_at else None,
        }
        locked.flagged_for_human, locked.flagged_at, locked.flag_reason = False, None, ""
        locked.flag_seen_through = seen
        locked.save(
            update_fields=[
                "flagged_for_human",
                "flagged_at",
                "flag_reason",
                "flag_seen_through",
                "updated_at",
            ]
        )
        audit_record(
            action="review.flag_cleared",
            actor=Actor.of(actor),
            workspace=locked.workspace,
            target=Target("reviewspace", str(locked.pk), str(locked.pull_request)),
            payload={"round": seen, "note": note.strip()[:2000], **was},
            request=request,
        )
        emit(locked.pk, "review.space_status", status=locked.status, flagged=False)
        emit_list_row(locked.workspace_id, locked.pk)
    return locked
