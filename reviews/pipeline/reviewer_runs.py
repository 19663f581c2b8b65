"""Running one reviewer stream: an offline analyzer (reviews/pipeline/analyzer_runs.py) or a
model agent (reviews/pipeline/model_runs.py), moved through its states with the stream service.
A panel finding runs in reviews/pipeline/panel_runs.py."""

from __future__ import annotations

from typing import Any

from reviews.domain.stream_states import StreamState
from reviews.models import ReviewerStream
from reviews.pipeline.analyzer_runs import ANALYZERS, run_analyzer
from reviews.pipeline.model_runs import ReviewerReads, run_model_reviewer
from reviews.pipeline.panel_runs import verify_group
from reviews.services.streams import stream_transition

__all__ = ["ANALYZERS", "run_stream", "verify_group"]


def run_stream(
    stream: ReviewerStream, *, fresh: bool = False, reads: ReviewerReads | None = None
) -> dict[str, Any]:
    """`fresh`: the stream was just read with its round, space, workspace and repository (a
    step's runner reads them with the step); otherwise they are read here. `reads`: the
    reviewers' settings and memory, read once for the steps claimed with this one."""
    if not (fresh and ReviewerStream.round.is_cached(stream)):
        stream = ReviewerStream.objects.select_related(
            "round__space__workspace", "round__space__pull_request__repository"
        ).get(pk=stream.pk)
    if stream.state == ReviewerStream.State.DONE:
        return {"state": "done"}
    if reads is None or stream.pk not in reads.started:
        # The attempt is counted from the row just read: the step's claim (a lease) lets one
        # runner at a time read and count it, so no second read is needed to learn the number.
        stream_transition(stream, StreamState.RUNNING, attempts=stream.attempts + 1)
    if stream.kind == ReviewerStream.Kind.ANALYZER:
        return run_analyzer(stream)
    return run_model_reviewer(stream, reads)
