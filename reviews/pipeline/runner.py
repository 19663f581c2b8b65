"""The durable coordinator of a round (DESIGN.md §2, issue: pipeline §6).

Progress lives in the database: `ReviewRound.stage` and `stats["done_stages"]` for inline stages,
`PipelineStep` rows for fan-out stages. `advance` is safe to call any number of times from any
process: it takes a short lease on the round, moves it as far as it can, and lets go. Steps run
in their own tasks (one per reviewer, one per panel finding) and call `advance` when they end.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from reviews.events import emit
from reviews.models import PipelineStep, ReviewRound
from reviews.pipeline import stages
from reviews.pipeline.template import PR_REVIEW_STAGES, Stage, gate_passes

log = logging.getLogger(__name__)

Dispatch = Callable[[str, int], None]  # ("advance" | "step", id)
OPEN_STATES = (ReviewRound.State.PENDING, ReviewRound.State.RUNNING)
TERMINAL_STEP_STATES = (PipelineStep.State.DONE, PipelineStep.State.FAILED)


def celery_dispatch(kind: str, object_id: int) -> None:
    """Queue work after commit: Celery in the full stack, a server thread when embedded."""
    from config.background import enqueue
    from reviews.pipeline.tasks import pipeline_advance_task, pipeline_step_task

    enqueue(pipeline_advance_task if kind == "advance" else pipeline_step_task, object_id)


def _lease() -> timedelta:
    return timedelta(seconds=settings.QUORUM_STEP_LEASE_SECONDS)


# -- the coordinator ------------------------------------------------------------------------


def advance(round_id: int, *, dispatch: Dispatch = celery_dispatch) -> None:
    for _ in range(3):
        if not _claim_round(round_id):
            return
        try:
            while _move(round_id, dispatch):
                pass
        finally:
            ReviewRound.objects.filter(pk=round_id).update(lease_until=None)
        # A step that ended while we held the lease found it taken and left: look once more.
        if not _stage_complete(round_id):
            return


def _claim_round(round_id: int) -> bool:
    now = timezone.now()
    return (
        ReviewRound.objects.filter(pk=round_id, state__in=OPEN_STATES)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_until=now + _lease())
        == 1
    )


def _stage(name: str) -> Stage:
    return next(s for s in PR_REVIEW_STAGES if s.name == name)


def _next_stage(review_round: ReviewRound) -> Stage | None:
    facts = review_round.stats.get("facts", {})
    names = [s.name for s in PR_REVIEW_STAGES]
    start = names.index(review_round.stage) + 1 if review_round.stage else 0
    for stage in PR_REVIEW_STAGES[start:]:
        if gate_passes(stage.run_when, facts):
            return stage
    return None


def _stage_complete(round_id: int) -> bool:
    review_round = ReviewRound.objects.filter(pk=round_id, state__in=OPEN_STATES).first()
    if review_round is None or not review_round.stage:
        return review_round is not None
    stage = _stage(review_round.stage)
    if stage.kind == "inline":
        return stage.name in review_round.stats.get("done_stages", [])
    return (
        not review_round.steps.filter(stage=stage.name)
        .exclude(state__in=TERMINAL_STEP_STATES)
        .exists()
    )


def _move(round_id: int, dispatch: Dispatch) -> bool:
    """Take one step of the stage machine; False when the round must wait or is over."""
    review_round = ReviewRound.objects.select_related(
        "space__workspace", "space__pull_request__repository"
    ).get(pk=round_id)
    if review_round.state not in OPEN_STATES:
        return False
    if timezone.now() - review_round.created_at > timedelta(
        seconds=settings.QUORUM_ROUND_TIMEOUT_SECONDS
    ):
        stages.round_fail(review_round, "The review timed out before it could finish.")
        return False
    if review_round.stage:
        current = _stage(review_round.stage)
        if current.kind == "fanout":
            _recover_steps(review_round, current, dispatch)
            if not _stage_complete(round_id):
                return False
        elif current.name not in review_round.stats.get("done_stages", []):
            return _run_inline(review_round, current)
    following = _next_stage(review_round)
    if following is None:
        return False
    review_round.stage = following.name
    review_round.state = ReviewRound.State.RUNNING
    review_round.save(update_fields=["stage", "state"])
    emit(review_round.space_id, "review.stage", stage=following.name)
    if following.kind == "inline":
        return _run_inline(review_round, following)
    created = stages.FANOUT[following.name](review_round)
    for step in created:
        dispatch("step", step.pk)
    return not created


def _run_inline(review_round: ReviewRound, stage: Stage) -> bool:
    try:
        stages.INLINE[stage.name](review_round)
    except Exception as exc:
        log.exception("stage %s of round %s failed", stage.name, review_round.pk)
        stages.round_fail(review_round, f"The {stage.name} stage failed: {exc}")
        return False
    review_round.refresh_from_db()
    done = review_round.stats.setdefault("done_stages", [])
    if stage.name not in done:
        done.append(stage.name)
    review_round.save(update_fields=["stats"])
    return review_round.state in OPEN_STATES


def _recover_steps(review_round: ReviewRound, stage: Stage, dispatch: Dispatch) -> None:
    """Steps whose worker died (lease lapsed) or that were never picked up go out again."""
    now = timezone.now()
    stale = review_round.steps.filter(stage=stage.name).filter(
        Q(state=PipelineStep.State.RUNNING, lease_until__lt=now)
        | Q(state=PipelineStep.State.PENDING, updated_at__lt=now - _lease())
    )
    for step in stale:
        PipelineStep.objects.filter(pk=step.pk, state=step.state).update(
            state=PipelineStep.State.PENDING
        )
        dispatch("step", step.pk)


# -- steps ----------------------------------------------------------------------------------


def run_step(step_id: int, *, dispatch: Dispatch = celery_dispatch) -> None:
    """Run one fan-out step once; a redelivered or duplicate task finds it taken and leaves."""
    now = timezone.now()
    claimed = (
        PipelineStep.objects.filter(pk=step_id)
        .filter(
            Q(state=PipelineStep.State.PENDING)
            | Q(state=PipelineStep.State.RUNNING, lease_until__lt=now)
        )
        .update(
            state=PipelineStep.State.RUNNING, attempts=F("attempts") + 1, lease_until=now + _lease()
        )
    )
    if claimed != 1:
        return
    step = PipelineStep.objects.select_related("round__space__workspace", "stream", "node").get(
        pk=step_id
    )
    if step.round.state not in OPEN_STATES:
        _finish(step, PipelineStep.State.FAILED, error=f"round {step.round.state}")
        return
    try:
        with _heartbeat(step.pk):
            result = stages.STEP_RUNNERS[step.stage](step)
    except Exception as exc:
        log.exception("step %s failed", step)
        _finish(step, PipelineStep.State.FAILED, error=str(exc) or type(exc).__name__)
    else:
        _finish(step, PipelineStep.State.DONE, result=result or {})
    dispatch("advance", step.round_id)


@contextmanager
def _heartbeat(step_id: int):
    """Renew the step's lease while it runs: only a step whose worker died goes stale."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.QUORUM_STEP_LEASE_SECONDS / 3):
                PipelineStep.objects.filter(pk=step_id, state=PipelineStep.State.RUNNING).update(
                    lease_until=timezone.now() + _lease()
                )
        finally:
            connections.close_all()

    thread = threading.Thread(target=beat, name=f"lease-{step_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _finish(step: PipelineStep, state: str, *, error: str = "", result: dict | None = None) -> None:
    with transaction.atomic():
        PipelineStep.objects.filter(pk=step.pk).update(
            state=state, error=error[:2000], result=result or {}, lease_until=None
        )


def recover(*, dispatch: Dispatch = celery_dispatch) -> int:
    """Restart what a dead worker left: open rounds go back to their coordinator."""
    rounds = list(ReviewRound.objects.filter(state__in=OPEN_STATES).values_list("pk", flat=True))
    for round_id in rounds:
        dispatch("advance", round_id)
    return len(rounds)


# -- running a round in this process (command line, benchmarks) ------------------------------


def run_inline(
    round_id: int, *, workers: int = 8, on_progress: Callable[[str], None] | None = None
) -> ReviewRound:
    """Drive a round to its end here, running fan-out steps on a thread pool."""
    from concurrent.futures import ThreadPoolExecutor

    queue: list[tuple[str, int]] = [("advance", round_id)]

    def dispatch(kind: str, object_id: int) -> None:
        queue.append((kind, object_id))

    def step_in_thread(step_id: int) -> None:
        try:
            run_step(step_id, dispatch=dispatch)
        finally:
            connections.close_all()

    last_stage = None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="quorum-step") as pool:
        while queue:
            batch, queue[:] = list(queue), []
            steps = [object_id for kind, object_id in batch if kind == "step"]
            for _ in pool.map(step_in_thread, steps):
                pass
            if any(kind == "advance" for kind, _ in batch) or steps:
                advance(round_id, dispatch=dispatch)
            stage = ReviewRound.objects.values_list("stage", flat=True).get(pk=round_id)
            if on_progress and stage != last_stage:
                on_progress(stage)
                last_stage = stage
    return ReviewRound.objects.get(pk=round_id)
