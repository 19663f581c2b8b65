"""Celery discovers tasks in `<app>.tasks`; the pipeline's live in reviews/pipeline/tasks.py."""

from reviews.pipeline.tasks import (
    pipeline_advance_task,
    pipeline_recover_task,
    pipeline_step_task,
    requirements_rerun_task,
)

__all__ = [
    "pipeline_advance_task",
    "pipeline_recover_task",
    "pipeline_step_task",
    "requirements_rerun_task",
]
