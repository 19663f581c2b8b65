"""Running an offline analyzer as a reviewer: its findings recorded as its stream's, what it
checked kept as its statement of coverage."""

from __future__ import annotations

from typing import Any

from django.db.models import F

from reviews.agents.offline import ANALYZER_SCOPES, ANALYZERS
from reviews.domain import vendored
from reviews.domain.redaction import redact_text
from reviews.domain.stream_states import StreamState
from reviews.models import ReviewerStream
from reviews.pipeline.attempts import reset_stream
from reviews.pipeline.inputs import file_text, line_counter
from reviews.services.node_recording import MAX_KEPT_REASONS, Finding, node_record_many
from reviews.services.round_files import round_changed_files
from reviews.services.streams import stream_transition
from reviews.services.worktrees import round_worktree

__all__ = ["ANALYZERS", "ANALYZER_SCOPES", "run_analyzer"]


def run_analyzer(stream: ReviewerStream) -> dict[str, Any]:
    review_round = stream.round
    root = round_worktree(review_round=review_round)
    files = round_changed_files(review_round)
    if stream.agent != "secrets":  # a committed credential counts wherever it sits
        # Vendored, generated and minified files are someone else's code: not linted.
        files = [f for f in files if f.not_for_models_reason not in vendored.KINDS]
    if stream.attempts > 1:  # a first attempt has nothing of an earlier one to discard
        reset_stream(stream)
    result = ANALYZERS[stream.agent].run(root, files)
    # All of an analyzer's findings arrive at once: they are written together.
    node_record_many(
        stream=stream,
        findings=[Finding(f.payload, f.evidence) for f in result.findings],
        file_lines=line_counter(root),
        file_text=file_text(root),
        first_attempt=stream.attempts == 1,
    )
    if result.rejected:
        # The reasons are kept like a model's (capped), so the page can say what was refused.
        kept = list(ReviewerStream.objects.get(pk=stream.pk).rejection_reasons)
        ReviewerStream.objects.filter(pk=stream.pk).update(
            rejected=F("rejected") + len(result.rejected),
            rejection_reasons=(kept + list(result.rejected))[:MAX_KEPT_REASONS],
        )
    if not result.ok:
        error = redact_text(result.error or "")  # a tool's stderr may quote the file
        stream_transition(stream, StreamState.FAILED, error=error)
        return {"state": "failed", "error": error}
    note = "; ".join(
        [f"{stream.agent} checked {len(result.files_checked)} changed file(s)", *result.notes]
    )
    # What it checked is its statement of coverage for its axes (reviews/domain/axes.py).
    checked = {
        "kind": "coverage",
        "files": list(result.files_checked),
        "scope": ANALYZER_SCOPES.get(stream.agent, ""),
    }
    stream_transition(stream, StreamState.DONE, coverage_note=note, notes=[checked])
    return {"state": "done", "findings": len(result.payloads)}
