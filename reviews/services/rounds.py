"""Person-driven changes to a round: cancel it, supply the original request, submit an axis."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from config.safeurl import web_url_problem
from guardrails.audit import Actor, Target, audit_record
from reviews.domain import types as t
from reviews.events import emit
from reviews.models import ReviewerStream, ReviewRound
from reviews.services.spaces import space_status_refresh
from reviews.services.verdicts import axis_record, verdict_follow

SUBMITTABLE_AXES = (t.AxisName.VISUAL, t.AxisName.PERFORMANCE, t.AxisName.API_CONTRACT)


class RoundError(Exception):
    """The change is not possible in the round's current state; the message says why."""


def _audit(
    review_round: ReviewRound, actor: Any, action: str, request: Any, **payload: Any
) -> None:
    audit_record(
        action=action,
        actor=Actor.of(actor),
        workspace=review_round.space.workspace,
        target=Target(
            "reviewspace", str(review_round.space_id), str(review_round.space.pull_request)
        ),
        payload={"round": review_round.number, **payload},
        request=request,
    )


def round_cancel(*, review_round: ReviewRound, actor: Any, request: Any = None) -> ReviewRound:
    with transaction.atomic():
        updated = ReviewRound.objects.filter(
            pk=review_round.pk, state__in=[ReviewRound.State.PENDING, ReviewRound.State.RUNNING]
        ).update(
            state=ReviewRound.State.CANCELLED,
            finished_at=timezone.now(),
            error="Cancelled by a person.",
        )
        if not updated:
            raise RoundError(
                f"Round {review_round.number} is {review_round.state}: nothing to cancel."
            )
        _audit(review_round, actor, "review.cancelled", request)
        space_status_refresh(space=review_round.space_id)
        emit(review_round.space_id, "review.stage", stage="cancelled")
    review_round.refresh_from_db()
    return review_round


def round_supply_request(
    *, review_round: ReviewRound, text: str, actor: Any, request: Any = None
) -> ReviewerStream | None:
    """Store the original request; a requirements reviewer waiting on it is run again (only it)."""
    text = text.strip()
    if not text:
        raise RoundError(
            "Paste the original request: the requirements reviewer compares the change with it."
        )
    with transaction.atomic():
        ReviewRound.objects.filter(pk=review_round.pk).update(original_request=text)
        stream = review_round.streams.filter(
            dimension=t.Dimension.REQUIREMENTS, state=ReviewerStream.State.SKIPPED
        ).first()
        if stream is not None:
            ReviewerStream.objects.filter(pk=stream.pk).update(
                state=ReviewerStream.State.PENDING, error=""
            )
        _audit(review_round, actor, "review.request_supplied", request, rerun=stream is not None)
        verdict_follow(
            review_round=review_round,
            reason="original request supplied",
            actor=actor,
            request=request,
        )
    if stream is not None:
        from config.background import enqueue
        from reviews.pipeline.tasks import requirements_rerun_task

        enqueue(requirements_rerun_task, stream.pk, actor_id=getattr(actor, "pk", None))
    return stream


def axis_submit(
    *,
    review_round: ReviewRound,
    axis: t.AxisName,
    result: t.AxisResult,
    evidence_url: str,
    details: dict[str, Any],
    actor: Any,
    request: Any = None,
):
    """A CI system's result for a deterministic axis (§3.6); the verdict is decided again."""
    if axis not in SUBMITTABLE_AXES:
        allowed = ", ".join(a.value for a in SUBMITTABLE_AXES)
        raise RoundError(f"{axis.value} cannot be submitted; submittable axes: {allowed}.")
    if evidence_url and (problem := web_url_problem(evidence_url)):
        raise RoundError(f"The evidence URL is refused: {problem}.")
    with transaction.atomic():
        row = axis_record(
            review_round=review_round,
            axis=axis,
            result=result,
            source="submitted",
            details=details,
            evidence_url=evidence_url,
            submitted_by=actor,
        )
        _audit(
            review_round,
            actor,
            "axis.submitted",
            request,
            axis=axis.value,
            result=result.value,
            evidence=evidence_url,
        )
        if review_round.state == ReviewRound.State.FINISHED:
            verdict_follow(
                review_round=review_round,
                reason=f"axis {axis.value} submitted: {result.value}",
                actor=actor,
                request=request,
            )
    return row
