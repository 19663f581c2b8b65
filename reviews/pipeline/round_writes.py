"""Writing a round's coordinator state: the lease a coordinator holds while it moves the round
(claimed, renewed, let go), the statement that enters the next stage, and the stages recorded
done. The coordinator (runner.py) decides where the round goes; this is how it is recorded,
as step_writes.py is for the steps."""

from __future__ import annotations

import logging
import uuid

from django.db.models import F, Q
from django.utils import timezone

from reviews.models import ReviewRound
from reviews.pipeline import round_reads
from reviews.pipeline.faults import CONNECTION_ERRORS, retry_db
from reviews.pipeline.step_writes import step_lease
from reviews.pipeline.template import Stage
from reviews.services.rounds import round_transition

log = logging.getLogger(__name__)

OPEN_STATES = (ReviewRound.State.PENDING, ReviewRound.State.RUNNING)


def round_claim(round_id: int) -> str | None:
    now = timezone.now()
    token = uuid.uuid4().hex
    claimed = (
        ReviewRound.objects.filter(pk=round_id, state__in=OPEN_STATES)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_until=now + step_lease(), lease_token=token)
    )
    return token if claimed == 1 else None


def round_renew(round_id: int, token: str) -> None:
    ReviewRound.objects.filter(pk=round_id, lease_token=token).update(
        lease_until=timezone.now() + step_lease()
    )


def round_release(round_id: int, token: str) -> None:
    try:
        retry_db(
            lambda: ReviewRound.objects.filter(pk=round_id, lease_token=token).update(
                lease_until=None, lease_token=""
            ),
            what=f"releasing round {round_id}",
            attempts=4,  # waits of 0.5, 1 and 2 s: a lease lapses by itself anyway
        )
    except CONNECTION_ERRORS:
        log.warning("round %s: lease not released; it lapses by itself", round_id)


def stage_enter(
    review_round: ReviewRound,
    following: Stage,
    done_stages: list[str],
    *,
    let_go: bool,
    token: str,
) -> int:
    """The statement that enters the round's next stage, with what the stage that just ended
    learned; `let_go`: it lets go of the lease too. 0 when the round was no longer open (or
    the lease no longer this coordinator's)."""
    if review_round.state != ReviewRound.State.RUNNING:
        # A round not admitted by the bound (run_inline) enters its first stage by the
        # statement that moves it to running; an admitted one was moved by its admission.
        # Conditional: a round superseded or cancelled since it was read keeps that state.
        learned = (
            {"stats": review_round.stats, "facts": review_round.facts}
            if round_reads.take_unsaved(review_round)
            else {}
        )
        moved = int(
            round_transition(
                review_round,
                ReviewRound.State.RUNNING,
                stage=following.name,
                done_stages=done_stages,
                **learned,
                **({"lease_until": None, "lease_token": ""} if let_go else {}),
            )
        )
    else:
        # A round already running stays so: the stage's write is conditional on it being
        # open (and, letting go of the lease, on holding it).
        rows = ReviewRound.objects.filter(pk=review_round.pk, state__in=OPEN_STATES)
        if let_go:
            rows = rows.filter(lease_token=token)
        # With what the stage that just ended learned: both written, or neither.
        learned_now = round_reads.take_unsaved(review_round)
        moved = rows.update(
            stage=following.name,
            done_stages=done_stages,
            stats=review_round.stats if learned_now else F("stats"),
            facts=review_round.facts if learned_now else F("facts"),
            lease_until=None if let_go else F("lease_until"),
            lease_token="" if let_go else F("lease_token"),
        )
    return moved


def stages_done_record(review_round: ReviewRound, done: list[str]) -> None:
    review_round.done_stages = done
    rows = ReviewRound.objects.filter(pk=review_round.pk)
    if round_reads.take_unsaved(review_round):
        rows.update(done_stages=done, stats=review_round.stats, facts=review_round.facts)
    else:
        rows.update(done_stages=done)
