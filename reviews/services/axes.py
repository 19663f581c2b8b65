"""Recording a round's axes, and the token axes computed from what reviewers covered and found.

The finalise stage records them at the end of the pipeline, and `verdict_follow` again after
every decision, so a dismissed finding stops failing its axis. Both reach them here, below the
verdict service and the pipeline alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reviews.agents.offline import ANALYZERS
from reviews.domain import types as t
from reviews.domain.axes import AnalyzerRun, token_axes_detailed
from reviews.domain.closings import coverage_statement
from reviews.domain.round_stats import RoundFacts
from reviews.live.events import emit
from reviews.models import AxisResult, ReviewerStream, ReviewNode, ReviewRound
from reviews.selectors import node_view

_AXIS_FIELDS = (
    "result",
    "source",
    "details",
    "evidence_url",
    "submitted_by",
    "gated",
    "updated_at",
)


def axis_record(
    *,
    review_round: ReviewRound,
    axis: t.AxisName,
    result: t.AxisResult,
    source: str,
    details: dict[str, Any] | None = None,
    evidence_url: str = "",
    submitted_by: Any = None,
) -> AxisResult:
    (row,) = axes_record(
        review_round=review_round,
        results=[(axis, result, source, details)],
        evidence_url=evidence_url,
        submitted_by=submitted_by,
    )
    return row


def axes_record(
    *,
    review_round: ReviewRound,
    results: Sequence[tuple[t.AxisName, t.AxisResult, str, dict[str, Any] | None]],
    evidence_url: str = "",
    submitted_by: Any = None,
) -> list[AxisResult]:
    """Record axes: (axis, result, source, details) each; of an axis named twice, the later
    stands (as two writes one after the other would leave it)."""
    results = list({row[0]: row for row in results}.values())
    if not results:
        return []
    gated_axes = review_round.space.workspace.gated_axes or []
    # One upsert on (round, axis) for them all rather than a locked read and a write each: the
    # finaliser records every axis of a round, and again after each decision.
    rows = AxisResult.objects.bulk_create(
        [
            AxisResult(
                round=review_round,
                axis=axis.value,
                result=result.value,
                source=source,
                details=details or {},
                evidence_url=evidence_url,
                submitted_by=submitted_by,
                gated=axis.value in gated_axes,
            )
            for axis, result, source, details in results
        ],
        update_conflicts=True,
        unique_fields=["round", "axis"],
        update_fields=[*_AXIS_FIELDS],
    )
    for axis, result, _, _ in results:
        emit(review_round.space_id, "review.axis_changed", axis=axis.value, result=result.value)
    return rows


# Offline analyzers report on a dimension too: bandit is a security reviewer.
_ANALYZER_DIMENSIONS = {
    "ruff": t.Dimension.QUALITY,
    "bandit": t.Dimension.SECURITY,
    "secrets": t.Dimension.SECURITY,
    "oxlint": t.Dimension.QUALITY,
    "ast-grep": t.Dimension.SECURITY,
}


def stream_dimension(stream: ReviewerStream) -> t.Dimension:
    for candidate in (stream.dimension, stream.agent, stream.name):
        try:
            return t.Dimension(candidate)
        except ValueError:
            continue
    return _ANALYZER_DIMENSIONS.get(stream.agent, t.Dimension.QUALITY)


def stream_dimensions(stream: ReviewerStream, facts: RoundFacts | None) -> set[t.Dimension]:
    """The dimensions a stream reviewed: its own, and security when it carried the round's
    security check (reviews/domain/tiers.py `security_host`)."""
    carried = facts is not None and stream.name in (facts.security_check or ())
    return {stream_dimension(stream), *([t.Dimension.SECURITY] if carried else [])}


AxisRow = tuple[t.AxisName, t.AxisResult, str, dict[str, Any] | None]


def finished_analyzer_runs(streams: list[ReviewerStream]) -> list[AnalyzerRun]:
    """Analyzer streams that finished, with the files they checked (their coverage note)."""
    runs = []
    for stream in streams:
        analyzer = ANALYZERS.get(stream.agent)
        if (
            stream.kind != ReviewerStream.Kind.ANALYZER
            or stream.state != ReviewerStream.State.DONE
            or analyzer is None
        ):
            continue
        note: dict[str, Any] = next(
            (n for n in stream.notes or [] if n.get("kind") == "coverage"), {}
        )
        runs.append(
            AnalyzerRun(
                tool=stream.agent,
                axes=analyzer.axes,
                files=tuple(note.get("files") or ()),
                scope=note.get("scope", ""),
            )
        )
    return runs


def token_axes_record(
    review_round: ReviewRound,
    *,
    streams: list[ReviewerStream] | None = None,
    nodes: list | None = None,
) -> None:
    """The token axes from what the reviewers and analyzers covered and the findings still
    active. Run at the end of the pipeline and again after every decision, so a dismissed
    finding stops failing its axis; a result submitted from CI is never overwritten."""
    axes_record(review_round=review_round, results=token_axes(review_round, streams, nodes))


def token_axes(
    review_round: ReviewRound,
    streams: list[ReviewerStream] | None,
    nodes: list | None,
    recorded: dict[str, str] | None = None,
) -> list[AxisRow]:
    """The token axes to record: (axis, result, "tokens", details) each. `recorded`: the
    round's axes already recorded, axis → source, when the caller has read them."""
    if streams is None:
        streams = list(review_round.streams.exclude(kind=ReviewerStream.Kind.VERIFIER))
    if nodes is None:
        nodes = [
            node_view(n, [])
            for n in ReviewNode.objects.filter(round=review_round).select_related("stream")
        ]
    # A token axis passes only when a reviewer of its dimension listed what it covered in its
    # closing answer; prose alone covers nothing (reviews/domain/closings.py).
    # A reviewer that carried the security check speaks for security too; a dimension two
    # reviewers ran counts what either listed.
    done = [
        s
        for s in streams
        if s.state == ReviewerStream.State.DONE and s.kind == ReviewerStream.Kind.MODEL
    ]
    coverage: dict[t.Dimension, str | None] = {}
    for s in done:
        for dimension in stream_dimensions(s, review_round.facts):
            coverage[dimension] = coverage.get(dimension) or coverage_statement(s.closing) or None
    # An analyzer that ran over changed files is explicit coverage for its axes.
    axes = token_axes_detailed(
        coverage=coverage, nodes=nodes, analyzers=finished_analyzer_runs(streams)
    )
    if recorded is None:
        recorded = dict(review_round.axes.values_list("axis", "source"))
    submitted = {axis for axis, source in recorded.items() if source != "tokens"}
    # testGap comes from the cohorts; a CI submission stands.
    return [
        (axis, result, "tokens", details)
        for axis, (result, details) in axes.items()
        if axis is not t.AxisName.TEST_GAP and axis.value not in submitted
    ]
