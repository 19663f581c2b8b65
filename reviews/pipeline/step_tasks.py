"""What a step's task does: run the step, then, if it was the last open step of its stage, move
its round on in the same task.

A coordinator's message per step (each a task with its own claim and read of the round) mostly
found the stage still open. Each step looks after its own outcome is written, so the last one
to write sees every other outcome and no stage is left without a coordinator. A task that dies
between its write and the move leaves a stalled round, which the sweeper hands back as it does a
lost message (docs/durability.md)."""

from __future__ import annotations

from django.db.models import Subquery

from reviews.models import PipelineStep
from reviews.pipeline.admission import TERMINAL_STEP_STATES
from reviews.pipeline.faults import CONNECTION_ERRORS
from reviews.pipeline.runner import advance_surviving, celery_dispatch, run_step_surviving


def run_step_then_advance(step_id: int) -> None:
    """Run the step; the last open step of its stage moves the round on here."""
    asked: set[int] = set()  # the step's round, once its outcome is recorded

    def dispatch(kind: str, object_id: int) -> None:
        if kind == "advance":
            asked.add(object_id)
        else:
            celery_dispatch(kind, object_id)

    run_step_surviving(step_id, dispatch=dispatch)
    for round_id in asked:
        try:
            if _stage_open_besides(round_id, step_id):
                continue
        except CONNECTION_ERRORS:
            pass  # the coordinator looks for itself
        advance_surviving(round_id)


def _stage_open_besides(round_id: int, step_id: int) -> bool:
    """Another step of the round, in this step's stage, is not over yet. One query."""
    stage = PipelineStep.objects.filter(pk=step_id).values("stage")[:1]
    return (
        PipelineStep.objects.filter(round_id=round_id, stage=Subquery(stage))
        .exclude(pk=step_id)
        .exclude(state__in=TERMINAL_STEP_STATES)
        .exists()
    )
