"""Changes to a round: its state (the one writer), cancel, re-run, the original request, an axis."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from config.background import QueueUnavailable, enqueue
from config.safeurl import web_url_problem
from guardrails.audit import Actor, Target, audit_record
from reviews.domain import types as t
from reviews.domain.fix_loop import admit_round
from reviews.domain.round_states import (
    RoundState,
    can_rerun,
    sources_of,
    state_label,
)
from reviews.domain.stream_states import StreamState
from reviews.live.events import emit
from reviews.models import ReviewerStream, ReviewRound, ReviewSpace
from reviews.services.axes import axis_record
from reviews.services.check_runs import check_run_enqueue
from reviews.services.dispatch import round_enqueue, rounds_admit_enqueue
from reviews.services.spaces import space_lock_for_move, space_reopen, space_status_refresh
from reviews.services.streams import stream_transition
from reviews.services.verdicts import verdict_follow
from reviews.services.worktrees import worktrees_release_after_commit, worktrees_release_earlier

SUBMITTABLE_AXES = (t.AxisName.VISUAL, t.AxisName.PERFORMANCE, t.AxisName.API_CONTRACT)


class RoundError(ApplicationError):
    """The change is not possible (bad input, or the round's state); the message says why."""

    code = ErrorCode.ROUND_REFUSED


class RoundConflict(RoundError):
    """The round's state (ended, re-run, not the newest) refuses the change."""

    code = ErrorCode.ROUND_CONFLICT
    http_status = 409


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


def round_transition(
    review_round: ReviewRound, to: RoundState | str, *, error: str | None = None, **also: Any
) -> bool:
    """The only writer of ReviewRound.state. Moves the round to `to` if the table in
    reviews/domain/round_states.py allows it from the state it is in NOW (compare-and-set, so
    a cancel and a finishing pipeline cannot both win), stamps `finished_at` on a terminal
    state, and lets the space's status follow. Returns False, changing nothing, when the move
    is not allowed (the round ended meanwhile); True when the round is in `to` afterwards, and
    then `review_round` says so too. `also`: other columns written with the move (the stage
    the coordinator enters, the stats the finaliser records), in the same statement; also when
    the round was in `to` already and stays there."""
    to = RoundState(to)
    if "state" in also:
        raise TypeError("the state is the `to` argument")
    fields: dict[str, Any] = {"state": to.value}
    if to.terminal:
        fields["finished_at"] = timezone.now()
    if error is not None:
        fields["error"] = error[:2000]
    # Nested in a caller's transaction (the finaliser's) it adds no savepoint: a failure here
    # fails the caller's whole transaction anyway.
    with transaction.atomic(savepoint=False):
        # Lock order space → round, as round_start takes them: never the reverse.
        # Read with the facts the space's status follows from, as they stand after the move.
        locked = space_lock_for_move(review_round.space_id, round_id=review_round.pk, to=to.value)
        moved = ReviewRound.objects.filter(
            pk=review_round.pk, state__in=[s.value for s in sources_of(to) if s is not to]
        ).update(**fields, **also)
        if not moved:
            # Only staying in a non-terminal state (the next stage of a running round) is a
            # success without a write of the state.
            staying = ReviewRound.objects.filter(pk=review_round.pk, state=to.value)
            stays = not to.terminal and (staying.update(**also) > 0 if also else staying.exists())
            if stays:
                review_round.state = to.value
                for name, value in also.items():
                    setattr(review_round, name, value)
            return stays
        if locked is not None:
            # Read under the lock just taken.
            space_status_refresh(space=locked[0], locked=True, facts=locked[1])
            # The round's space is now as read under the lock (a caller in this transaction,
            # the finaliser's flag check, goes on from it); relations it was read with stay.
            if ReviewRound.space.is_cached(review_round):
                for field in ReviewSpace._meta.concrete_fields:
                    setattr(review_round.space, field.attname, getattr(locked[0], field.attname))
            else:
                review_round.space = locked[0]
        # A round's start, end, cancel or failure rewrites most of the page.
        emit(review_round.space_id, "review.round_state", state=to.value)
        # ... and what its GitHub check shows (after commit, in a task).
        check_run_enqueue(review_round)
        if to is RoundState.FINISHED:
            # The pull request's verdict is now about this head: earlier heads' checkouts go.
            worktrees_release_earlier(review_round=review_round)
    for name, value in {**fields, **also}.items():
        setattr(review_round, name, value)
    return True


def round_cancel(
    *, review_round: ReviewRound, actor: Any, request: Any = None, reason: str = ""
) -> ReviewRound:
    """`reason` replaces "Cancelled by …" when the system cancels (a merged pull request)."""
    with transaction.atomic():
        who = getattr(actor, "email", "") or getattr(actor, "label", "") or "a person"
        error = reason or f"Cancelled by {who}."
        was_running = review_round.state == RoundState.RUNNING
        if not round_transition(review_round, RoundState.CANCELLED, error=error):
            current = ReviewRound.objects.get(pk=review_round.pk).state
            raise RoundConflict(
                f"Round {review_round.number} is {state_label(current).lower()}: nothing to cancel."
            )
        _audit(review_round, actor, "review.cancelled", request)
        if was_running:
            # Its place among the rounds admitted at once is free: the oldest waiting round
            # takes it (after commit; the sweeper does it if this message is lost).
            rounds_admit_enqueue()
    review_round.refresh_from_db()
    return review_round


def round_rerun(*, review_round: ReviewRound, actor: Any, request: Any = None) -> ReviewRound:
    """Review the same head again as a new round (`rerun_of` names the failed or cancelled
    one) and queue it the way the start button does. Raises RoundError when the round is not
    the newest or did not fail or get cancelled; ReviewQueuedError when the queue is down (the
    round exists and starts once it is back)."""

    repository = review_round.space.pull_request.repository
    if repository.archived_at is not None:
        raise RoundConflict(f"{repository} is disconnected: its reviews are kept read-only.")
    if review_round.space.closed_reason in ("merged", "closed"):
        raise RoundConflict(
            f"The pull request was {review_round.space.closed_reason}: there is nothing to "
            "review again."
        )
    with transaction.atomic():
        space = ReviewSpace.objects.select_for_update().get(pk=review_round.space_id)
        old = ReviewRound.objects.get(pk=review_round.pk)
        again = old.reruns.order_by("number").first()
        if again is not None:
            raise RoundConflict(f"Round {old.number} was already re-run as round {again.number}.")
        newest = space.rounds.order_by("-number").first()
        if newest is not None and newest.number != old.number:
            raise RoundConflict(
                f"Round {old.number} is not the newest round: round {newest.number} reviews "
                "this pull request now."
            )
        if not can_rerun(old.state):
            raise RoundConflict(
                f"Round {old.number} is {state_label(old.state).lower()}: only a failed or "
                "cancelled round is re-run."
            )
        new = round_start(
            space=space,
            head_sha=old.head_sha,
            base_sha=old.base_sha,
            tier=old.tier,
            original_request=old.original_request,
        )
        ReviewRound.objects.filter(pk=new.pk).update(rerun_of=old)
        new.rerun_of = old
        _audit(old, actor, "review.rerun", request, new_round=new.number, head_sha=old.head_sha)
    try:
        round_enqueue(new)
    except QueueUnavailable as exc:
        raise ReviewQueuedError(new) from exc
    return new


def round_supply_request(
    *, review_round: ReviewRound, text: str, actor: Any, request: Any = None
) -> ReviewerStream | None:
    """Store the original request, for this round and the review's later rounds; a
    requirements reviewer waiting on it is run again (only it)."""
    text = text.strip()
    if not text:
        raise RoundError(
            "Paste the original request: the requirements reviewer compares the change with it."
        )
    with transaction.atomic():
        ReviewRound.objects.filter(pk=review_round.pk).update(original_request=text)
        ReviewSpace.objects.filter(pk=review_round.space_id).update(original_request=text)
        stream = review_round.streams.filter(
            dimension=t.Dimension.REQUIREMENTS, state=ReviewerStream.State.SKIPPED
        ).first()
        if stream is not None:
            stream_transition(stream, StreamState.PENDING, error="")
        _audit(review_round, actor, "review.request_supplied", request, rerun=stream is not None)
        verdict_follow(
            review_round=review_round,
            reason="original request supplied",
            actor=actor,
            request=request,
        )
    if stream is not None:
        enqueue("reviews.requirements_rerun", stream.pk, actor_id=getattr(actor, "pk", None))
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
    """A CI system's result for a deterministic axis; the verdict is decided again."""
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


class ReviewQueuedError(ApplicationError):
    """The round is recorded but the task queue did not take it: the sweeper starts it once the
    queue is back (reviews/pipeline/sweeper.py). The message is for the person who asked."""

    def __init__(self, review_round: ReviewRound) -> None:
        super().__init__(
            "The task queue is unavailable right now; the review is queued and will start "
            "when it returns."
        )
        self.review_round = review_round

    code = ErrorCode.QUEUE_UNAVAILABLE
    http_status = 503

    def extra(self) -> dict[str, Any]:
        # The round exists and starts by itself once the queue is back.
        queued = self.review_round
        return {"space": queued.space_id, "round": queued.number, "state": queued.state}


class RoundRefused(ApplicationError):
    """The fix loop does not admit this round (an agent asking again on a reviewed head)."""

    code = ErrorCode.ROUND_REFUSED
    http_status = 409


def round_start(
    *,
    space: ReviewSpace,
    head_sha: str,
    base_sha: str = "",
    tier: str,
    original_request: str = "",
    by_person: bool = True,
) -> ReviewRound:
    """Open the next round. A round already open for the same head SHA is returned as is.

    The original request is the space's: a round given none carries the space's, and one given
    a new text makes it the space's. `by_person=False` (an agent, or the system) is held to the
    fix loop's admission rule (reviews/domain/fix_loop.py): RoundRefused says why not."""
    with transaction.atomic():
        locked = ReviewSpace.objects.select_for_update().get(pk=space.pk)
        latest = locked.rounds.order_by("-number").first()
        open_states = (ReviewRound.State.PENDING, ReviewRound.State.RUNNING)
        if latest is not None and latest.head_sha == head_sha and latest.state in open_states:
            return latest
        given = original_request.strip()
        if not by_person:
            admission = admit_round(
                head_sha=head_sha,
                reviewed_heads=set(
                    locked.rounds.filter(state=ReviewRound.State.FINISHED).values_list(
                        "head_sha", flat=True
                    )
                ),
                flagged=locked.flagged_for_human,
                by_person=False,
                request_changed=bool(given) and given != locked.original_request.strip(),
            )
            if not admission.allowed:
                raise RoundRefused(admission.reason)
        if given and given != locked.original_request:
            ReviewSpace.objects.filter(pk=locked.pk).update(original_request=given)
            locked.original_request = given
        superseded = latest if latest is not None and latest.state in open_states else None
        if superseded is not None:
            if round_transition(superseded, ReviewRound.State.SUPERSEDED):
                worktrees_release_after_commit(
                    space_id=locked.pk, round_numbers=[superseded.number]
                )
            else:  # it ended on its own meanwhile: nothing was superseded
                superseded = None
        review_round = ReviewRound.objects.create(
            space=locked,
            number=(latest.number + 1) if latest else 1,
            head_sha=head_sha,
            base_sha=base_sha,
            tier=tier,
            original_request=given or locked.original_request,
            # A push keeps the pull request's place in the line of rounds admitted at once
            # (reviews/pipeline/admission.py): the round it replaced had waited, or started.
            queued_since=(superseded.queued_since or superseded.created_at)
            if superseded is not None
            else None,
        )
        if superseded is not None:
            ReviewRound.objects.filter(pk=superseded.pk).update(superseded_by=review_round)
        space_reopen(space=locked)
        space_status_refresh(space=locked)
        emit(locked.pk, "review.round_started", round=review_round.number)
    return review_round
