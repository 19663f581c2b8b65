"""The durable coordinator of a round.

Progress lives in the database: `ReviewRound.stage` and `ReviewRound.done_stages` for inline stages,
`PipelineStep` rows for fan-out stages. `advance` is safe to call any number of times from any
process: it takes a short lease on the round, moves it as far as it can, and lets go. Steps run
in their own tasks (one per reviewer, one per panel finding); the one that ends its stage calls
`advance` in the same task (reviews/pipeline/step_tasks.py).

Faults: a lost database connection is retried (reviews/pipeline/faults.py) and never fails a
round; a task the broker did not take is found again by `recover`, which the sweeper
(reviews/pipeline/sweeper.py) runs every few seconds. docs/durability.md tells the whole story.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Literal

from django.conf import settings
from django.db import connections
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from config.background import QueueUnavailable, enqueue
from reviews.domain.step_states import StepState, closed_outcome
from reviews.live.events import emit
from reviews.models import PipelineStep, ReviewRound
from reviews.pipeline import budget_runs, round_reads, stages
from reviews.pipeline.admission import (
    TERMINAL_STEP_STATES,
    admit_waiting,
    advance_not_sent,
    advance_sent,
    advance_taken,
    rounds_admit,
    stalled_rounds,
)
from reviews.pipeline.faults import CONNECTION_ERRORS, retry_db
from reviews.pipeline.gc_pause import collector_paused
from reviews.pipeline.model_runs import ReviewerReads
from reviews.pipeline.round_writes import (
    OPEN_STATES,
    round_claim,
    round_release,
    round_renew,
    stage_enter,
    stages_done_record,
)
from reviews.pipeline.step_writes import (
    BatchOutcomes,
    Finish,
    heartbeat,
    step_finish,
    step_lease,
    step_transition,
)
from reviews.pipeline.template import PR_REVIEW_STAGES, Stage, gate_passes

log = logging.getLogger(__name__)

Dispatch = Callable[[str, int], None]  # ("advance" | "step", id)


def queue_dispatch(kind: str, object_id: int) -> None:
    """Queue work after commit: Celery in the full stack, a server thread when embedded.
    Raises QueueUnavailable when the broker is down. A coordinator's message is stamped on its
    round first (`advance_sent_at`), so the sweeper can tell it queued from lost."""

    if kind == "advance":
        stamp = advance_sent(object_id)
        try:
            enqueue("reviews.pipeline_advance", object_id, stamp.isoformat())
        except QueueUnavailable:
            advance_not_sent(object_id, stamp)
            raise
        return
    enqueue("reviews.pipeline_advance" if kind == "advance" else "reviews.pipeline_step", object_id)


def celery_dispatch(kind: str, object_id: int) -> None:
    """`queue_dispatch` for work already recorded in rows: if the broker is down, the rows stay
    as they are and the sweeper queues them again once it is back."""

    try:
        queue_dispatch(kind, object_id)
    except QueueUnavailable as exc:
        log.warning("%s %s not queued (%s); the sweeper will queue it", kind, object_id, exc)


# -- the coordinator ------------------------------------------------------------------------


def advance(
    round_id: int,
    *,
    dispatch: Dispatch = celery_dispatch,
    look_again: bool = True,
    admission: bool = True,
    sent_at: datetime | None = None,
) -> ReviewRound | None:
    """Returns the round as the move that ended it left it (None while it is open, or when
    another coordinator holds it). `look_again=False`: no step of the round can end while this
    call runs (run_inline's dispatch only queues them for after it), so there is nothing to
    look once more for. `admission=False` (run_inline) starts a queued round without waiting
    for a place among the rounds admitted at once. `sent_at`: the stamp of the message that
    asked (taken now, whether this call gets the lease or not)."""
    if sent_at is not None:
        advance_taken(round_id, sent_at)
    for _ in range(3):
        token = round_claim(round_id)
        if token is None:
            return None
        moved: Moved = "wait"
        seen: list[ReviewRound] = []
        try:
            # Inline stages can outlast a lease (a large checkout, a lead pass): renew it, or the
            # sweeper would hand the round to a second coordinator meanwhile.
            with heartbeat(partial(round_renew, round_id, token), f"round-{round_id}"):
                while (moved := _move(round_id, dispatch, token, seen, admission)) == "again":
                    pass
        finally:
            if moved != "let_go":
                round_release(round_id, token)
        # A step that ended while we held the lease found it taken and left: look once more
        # (a round this move ended has nothing left to look for, nor steps dispatched once the
        # lease was let go).
        if seen and seen[-1].state not in OPEN_STATES:
            if admission:
                # Its place is free: the oldest waiting round takes it.
                admit_waiting(dispatch)
            return seen[-1]
        if moved in ("over", "let_go", "queued") or not look_again:
            return None
        if not _stage_complete(round_id):
            return None
    return None


def advance_surviving(
    round_id: int, *, dispatch: Dispatch = celery_dispatch, sent_at: datetime | None = None
) -> None:
    """`advance` through database blips; past the retries the sweeper resumes the round."""
    try:
        retry_db(
            lambda: advance(round_id, dispatch=dispatch, sent_at=sent_at), what=f"round {round_id}"
        )
    except CONNECTION_ERRORS as exc:
        log.error(
            "round %s: the database is still unreachable (%s); left to the sweeper", round_id, exc
        )


def _stage(name: str) -> Stage:
    return next(s for s in PR_REVIEW_STAGES if s.name == name)


def _next_stage(review_round: ReviewRound) -> Stage | None:
    facts = review_round.facts.for_gates() if review_round.facts else {}
    names = [s.name for s in PR_REVIEW_STAGES]
    start = names.index(review_round.stage) + 1 if review_round.stage else 0
    for stage in PR_REVIEW_STAGES[start:]:
        if gate_passes(stage.run_when, facts):
            return stage
    return None


def _stage_complete(round_id: int) -> bool:
    """The round is open and its stage done: a coordinator can move it on. One query: the
    round's stage, what is done, and whether a step of its stage is still open."""
    open_steps = PipelineStep.objects.filter(round=OuterRef("pk"), stage=OuterRef("stage")).exclude(
        state__in=TERMINAL_STEP_STATES
    )
    row = (
        ReviewRound.objects.filter(pk=round_id, state__in=OPEN_STATES)
        .annotate(waiting=Exists(open_steps))
        .values_list("stage", "done_stages", "waiting")
        .first()
    )
    if row is None:
        return False
    stage_name, done_stages, waiting = row
    if not stage_name:
        return True
    if _stage(stage_name).kind == "inline":
        return stage_name in done_stages
    return not waiting


#: What a move left: "again" (move once more), "wait" (for steps, or for nothing this
#: coordinator can tell), "over" (the round ended, as this move saw it), "let_go" (its last
#: statement let go of the lease: the one that entered a fan-out stage, whose steps then find
#: the round free, or the finaliser's, which ended it) or "queued" (the round waits for a
#: place among the rounds admitted at once; the round that frees one admits it).
Moved = Literal["again", "wait", "over", "let_go", "queued"]


def _move(
    round_id: int, dispatch: Dispatch, token: str, seen: list[ReviewRound], admission: bool
) -> Moved:
    """Move the stage machine as far as it goes without waiting: inline stages one after the
    other, up to a fan-out stage's steps or the end.

    An inline stage that ends is recorded in `done_stages` by the same statement that enters
    the next stage (the round is not read again in between: this coordinator holds the lease,
    the stage handlers update `review_round` as they save it, and the statement is conditional
    on the round being open). A crash before that statement runs the stage again, as a crash
    before a separate write would."""
    # Read with whether its stage has open steps: when it has none, a fan-out stage is over
    # without a look at them.
    open_steps = PipelineStep.objects.filter(round=OuterRef("pk"), stage=OuterRef("stage")).exclude(
        state__in=TERMINAL_STEP_STATES
    )
    review_round = (
        ReviewRound.objects.select_related("space__workspace", "space__pull_request__repository")
        # With its spend ledger, which the budget decisions of the move's stages share.
        .annotate(steps_open=Exists(open_steps), **budget_runs.ledger_columns())
        .get(pk=round_id)
    )
    seen.append(review_round)
    if (
        admission
        and review_round.state == ReviewRound.State.PENDING
        and not _admitted(review_round, dispatch)
    ):
        return "queued"
    # The stages this move runs share what they read of the round (reviews/pipeline/round_reads.py).
    with round_reads.sharing(review_round):
        round_reads.keep_ledger(review_round, budget_runs.ledger_of(review_round))
        return _move_on(review_round, dispatch, token)


def _admitted(review_round: ReviewRound, dispatch: Dispatch) -> bool:
    """A queued round asks for a place among the rounds admitted at once (the oldest waiting
    ones get the free places, which may be others: those are sent their coordinator). The
    round found running, admitted by another coordinator, is moved on as admitted too."""
    if _timed_out(review_round):
        return False
    running, others = rounds_admit(review_round)
    for round_id in others:
        dispatch("advance", round_id)
    return running


def _stopped(review_round: ReviewRound) -> Moved:
    if review_round.state in OPEN_STATES:
        return "wait"
    return "over" if review_round.lease_token else "let_go"


def _move_on(review_round: ReviewRound, dispatch: Dispatch, token: str) -> Moved:
    round_id = review_round.pk
    if review_round.state not in OPEN_STATES or _timed_out(review_round):
        return _stopped(review_round)
    stopped, finished = _resume(review_round, dispatch)
    if stopped is not None:
        return stopped
    while True:
        if finished is not None and _timed_out(review_round):
            # Checked again after each inline stage, as on every move before.
            return _stopped(review_round)
        following = _next_stage(review_round)
        if finished in review_round.done_stages:
            finished = None
        done = [*review_round.done_stages, finished] if finished else None
        if following is None:
            if done is not None:
                stages_done_record(review_round, done)
            return _stopped(review_round)
        # done_stages written as it stands when no stage just ended: only this coordinator
        # writes it.
        done_stages = done if done is not None else review_round.done_stages
        created: list[PipelineStep] = []
        let_go = False
        if following.kind == "fanout":
            # A fan-out stage's steps are created before the round enters it (planned as of
            # the round in it), so the statement that enters it can let go of the lease: the
            # steps, dispatched after it, find the round free to move on, and no coordinator
            # ever finds the stage entered without its steps. A crash in between leaves steps
            # of a stage not entered: the stage before runs again and creates none twice, and
            # the sweeper sends the ones waiting.
            review_round.stage, review_round.done_stages = following.name, done_stages
            created = stages.FANOUT[following.name](review_round)
            let_go = bool(created)
        moved = stage_enter(review_round, following, done_stages, let_go=let_go, token=token)
        if not moved:
            if created and _round_closed(round_id):
                # The round ended before it entered the stage: its steps are failed by their
                # runners, as every step of an ended round is.
                for step in created:
                    dispatch("step", step.pk)
            return _stopped(review_round)
        review_round.stage = following.name
        if done is not None:
            review_round.done_stages, finished = done, None
        emit(review_round.space_id, "review.stage", stage=following.name)
        if following.kind == "fanout":
            for step in created:
                dispatch("step", step.pk)
            if created:
                review_round.lease_token = ""
                return "let_go"  # waiting for the steps, the lease let go
            return "again"
        if not _run_inline(review_round, following):
            return _stopped(review_round)
        finished = following.name


def _resume(review_round: ReviewRound, dispatch: Dispatch) -> tuple[Moved | None, str | None]:
    """The stage the round is in, taken up again: a fan-out stage's open steps recovered (the
    round waits for them), an inline stage not yet done run. Returns how the move stops, if it
    does, and the inline stage done and not yet recorded."""
    if not review_round.stage:
        return None, None
    current = _stage(review_round.stage)
    if current.kind == "fanout":
        if getattr(review_round, "steps_open", True) and _recover_steps(
            review_round, current, dispatch
        ):
            return "wait", None  # steps of the stage are still open
    elif current.name not in review_round.done_stages:
        if not _run_inline(review_round, current):
            return _stopped(review_round), None
        return None, current.name
    return None, None


def _timed_out(review_round: ReviewRound) -> bool:
    if timezone.now() - review_round.created_at <= timedelta(
        seconds=settings.QUORUM_ROUND_TIMEOUT_SECONDS
    ):
        return False
    stages.round_fail(review_round, "The review timed out before it could finish.")
    return True


def _run_inline(review_round: ReviewRound, stage: Stage) -> bool:
    """Run an inline stage; True when it ended and the round is still open (the caller then
    records it done with its next move). A stage that ended the round (the finaliser) is
    recorded done here."""
    try:
        with collector_paused():
            stages.INLINE[stage.name](review_round)
    except CONNECTION_ERRORS:
        raise  # the database blipped: not the round's fault; the caller runs the stage again
    except Exception as exc:
        if _round_closed(review_round.pk):
            # Superseded or cancelled meanwhile (its checkout may be gone): not a failure.
            log.info("round %s ended during %s; stage stopped", review_round.pk, stage.name)
            return False
        log.exception("stage %s of round %s failed", stage.name, review_round.pk)
        stages.round_fail(review_round, f"The {stage.name} stage failed: {exc}")
        return False
    if review_round.state in OPEN_STATES:
        return True
    if stage.name not in review_round.done_stages:
        stages_done_record(review_round, [*review_round.done_stages, stage.name])
    return False


def _round_closed(round_id: int) -> bool:
    """The round ended (superseded by a push, cancelled, …) while work on it was running."""
    return not ReviewRound.objects.filter(pk=round_id, state__in=OPEN_STATES).exists()


def _round_ended(round_id: int) -> str | None:
    """The state the round ended in ("" when it is gone), or None while it is open."""
    state = ReviewRound.objects.filter(pk=round_id).values_list("state", flat=True).first()
    return None if state in OPEN_STATES else (state or "")


def _recover_steps(review_round: ReviewRound, stage: Stage, dispatch: Dispatch) -> int:
    """Steps whose worker died (lease lapsed) or that were never picked up go out again.
    Returns how many steps of the stage are still open (read in the same query)."""
    now = timezone.now()
    open_steps = list(
        review_round.steps.filter(stage=stage.name)
        .exclude(state__in=TERMINAL_STEP_STATES)
        .only("pk", "state", "lease_until", "updated_at")
    )
    stale = [
        step
        for step in open_steps
        if (
            step.state == PipelineStep.State.RUNNING
            and step.lease_until is not None
            and step.lease_until < now
        )
        or (step.state == PipelineStep.State.PENDING and step.updated_at < now - step_lease())
    ]
    for step in stale:
        # updated_at restarts the clock: a step waiting behind others in the queue is sent again
        # once per lease, not on every look.
        step_transition(step.pk, StepState.PENDING, Q(state=step.state), updated_at=now)
        dispatch("step", step.pk)
    return len(open_steps)


# -- steps ----------------------------------------------------------------------------------


def run_step(step_id: int, *, dispatch: Dispatch = celery_dispatch) -> None:
    """Run one fan-out step once; a redelivered or duplicate task finds it taken and leaves.
    A lost database connection propagates (the claim handed back) for the caller to retry."""
    for step in _claim_steps([step_id]):
        _run_claimed(step, dispatch=dispatch)


def _run_claimed(
    step: PipelineStep,
    *,
    dispatch: Dispatch,
    reads: ReviewerReads | None = None,
    finish: Finish | None = None,
) -> None:
    """Run a step this worker claimed, and record its outcome. `reads`: what was read once for
    the steps claimed with it (stages.start_claimed); `finish`: what records the outcome
    (`step_finish`, or run_inline's batch)."""
    finish = finish or step_finish
    step_id = step.pk
    attempt = step.attempts  # the claim's token: ours until the lease we just took lapses
    if step.round.state not in OPEN_STATES:
        # Superseded or cancelled, not failed: nothing went wrong with the step.
        finish(step, attempt, closed_outcome(step.round.state), error=f"round {step.round.state}")
        return
    try:
        with heartbeat(partial(_renew_step, step_id, attempt), f"lease-{step_id}"):
            result = stages.STEP_RUNNERS[step.stage](step, reads)
    except CONNECTION_ERRORS:
        _release_step(step_id, attempt)
        raise
    except Exception as exc:
        outcome = StepState.FAILED
        ended_as = _round_ended(step.round_id)
        if ended_as is not None:
            log.info("step %s stopped: its round ended meanwhile (%s)", step, exc)
            outcome = closed_outcome(ended_as)
        else:
            log.exception("step %s failed", step)
        finished = finish(step, attempt, outcome, error=str(exc) or type(exc).__name__)
    else:
        finished = finish(step, attempt, PipelineStep.State.DONE, result=result or {})
    if finished:
        dispatch("advance", step.round_id)


def run_step_surviving(step_id: int, *, dispatch: Dispatch = celery_dispatch) -> None:
    """`run_step` through database blips: the step starts over (its runner resets what an
    unfinished attempt wrote); past the retries its lease lapses and the sweeper re-runs it."""
    try:
        retry_db(lambda: run_step(step_id, dispatch=dispatch), what=f"step {step_id}")
    except CONNECTION_ERRORS as exc:
        log.error(
            "step %s: the database is still unreachable (%s); left to the sweeper", step_id, exc
        )


def _claim_steps(step_ids: Sequence[int]) -> list[PipelineStep]:
    """Take the steps that are free (counting an attempt each: the attempt number is a claim's
    token) in one statement, and read the ones taken in a second, whatever their number.

    The lease's end, to the microsecond, tells which steps this claim took: another claimer
    can take a step only once that lease has lapsed, and then writes a later one. Everything a
    runner reads of its round comes with the step: the workspace's settings and the repository
    its checkout is made from."""
    now = timezone.now()
    lease_until = now + step_lease()
    claimed = step_transition(
        step_ids,
        StepState.RUNNING,
        Q(state=PipelineStep.State.PENDING)
        | Q(state=PipelineStep.State.RUNNING, lease_until__lt=now),
        attempts=F("attempts") + 1,
        lease_until=lease_until,
    )
    if not claimed:
        return []
    return list(
        PipelineStep.objects.select_related(
            "round__space__workspace", "round__space__pull_request__repository", "stream", "node"
        )
        .filter(pk__in=list(step_ids), state=PipelineStep.State.RUNNING, lease_until=lease_until)
        .order_by("pk")
    )


def _renew_step(step_id: int, attempt: int) -> None:
    PipelineStep.objects.filter(
        pk=step_id, state=PipelineStep.State.RUNNING, attempts=attempt
    ).update(lease_until=timezone.now() + step_lease())


def _release_step(step_id: int, attempt: int) -> None:
    """Hand the claim back so a retry (here or on another worker) can take it at once."""
    try:
        retry_db(
            lambda: step_transition(
                step_id,
                StepState.PENDING,
                Q(state=PipelineStep.State.RUNNING, attempts=attempt),
                lease_until=None,
                updated_at=timezone.now(),
            ),
            what=f"releasing step {step_id}",
            attempts=4,  # waits of 0.5, 1 and 2 s: a lease lapses by itself anyway
        )
    except CONNECTION_ERRORS:
        log.warning("step %s: claim not handed back; its lease lapses by itself", step_id)


def recover(*, dispatch: Dispatch = queue_dispatch) -> int:
    """Hand every stalled round back to a coordinator, whose `_recover_steps` re-sends its
    stale steps, and admit waiting rounds into the places free. Idempotent: the leases make a
    duplicate harmless. The default dispatch raises when the broker is down, so a sweep stops
    at the first refusal and the next one retries. Returns the coordinators sent."""
    rounds = stalled_rounds()
    for round_id in rounds:
        dispatch("advance", round_id)
    return len(rounds) + admit_waiting(dispatch)


# -- running a round in this process (command line, benchmarks) ------------------------------


def run_inline(
    round_id: int, *, workers: int = 8, on_progress: Callable[[str], None] | None = None
) -> ReviewRound:
    """Drive a round to its end here, running fan-out steps on a thread pool."""
    from concurrent.futures import ThreadPoolExecutor, wait

    queue: list[tuple[str, int]] = [("advance", round_id)]

    def dispatch(kind: str, object_id: int) -> None:
        queue.append((kind, object_id))

    def step_dispatch(kind: str, object_id: int) -> None:
        # A step that ends asks for the coordinator: the advance after its batch answers it.
        if kind != "advance":
            dispatch(kind, object_id)

    outcomes = BatchOutcomes()

    def step_in_thread(step: PipelineStep, reads: ReviewerReads | None) -> None:
        try:
            _run_claimed(step, dispatch=step_dispatch, reads=reads, finish=outcomes)
        finally:
            connections.close_all()

    last_stage = None
    ended: ReviewRound | None = None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="quorum-step") as pool:
        while queue:
            batch, queue[:] = list(queue), []
            steps = [object_id for kind, object_id in batch if kind == "step"]
            # The batch's steps are claimed and read together (two statements, not two each),
            # their reviewers started together and their settings read once; then they run
            # side by side as their own tasks would.
            claimed = _claim_steps(steps) if steps else []
            shared = stages.start_claimed(claimed)
            runs = [pool.submit(step_in_thread, s, shared.get(s.pk)) for s in claimed]
            running = set(runs)
            while running:
                _, running = wait(running, timeout=settings.QUORUM_STEP_LEASE_SECONDS / 3)
                if running:
                    outcomes.renew()
            # Their spend and their outcomes together (a step that raised recorded no outcome:
            # it handed its claim back), then the first error, as each run's task would raise.
            for spend in {id(r.spend): r.spend for r in shared.values() if r.spend}.values():
                spend.write()
            outcomes.write()
            for run in runs:
                run.result()
            if any(kind == "advance" for kind, _ in batch) or steps:
                ended = (
                    advance(round_id, dispatch=dispatch, look_again=False, admission=False) or ended
                )
            if on_progress is None:
                continue
            stage = ReviewRound.objects.values_list("stage", flat=True).get(pk=round_id)
            if stage != last_stage:
                on_progress(stage)
                last_stage = stage
    # The round as the move that ended it left it (no read), or as it stands.
    return ended if ended is not None else ReviewRound.objects.get(pk=round_id)
