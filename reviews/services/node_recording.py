"""Recording a reviewer's findings: validated, fingerprinted, stored once per payload.

Apart from the status changes (reviews/services/nodes.py) because recording never moves a
finding's status: it writes new rows and counts refused payloads on their stream, and the
pipeline's reviewers, the analyzers and outside agents all come here first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from reviews.domain.fingerprints import node_fingerprint
from reviews.domain.node_tags import NodeTags
from reviews.domain.nodes import (
    Accepted,
    FileLines,
    NodePayload,
    Rejected,
    node_view_from_payload,
    parse_node_payload,
)
from reviews.live.events import emit
from reviews.models import ReviewerStream, ReviewNode

#: Reasons kept per stream for the UI; the count is exact, the list is a sample.
MAX_KEPT_REASONS = 20


@dataclass(frozen=True)
class RecordResult:
    node: ReviewNode | None
    rejection: str | None = None
    created: bool = False


def _payload_key(raw: Any) -> str:
    try:
        material = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        material = repr(raw)
    return hashlib.sha256(material.encode()).hexdigest()


def node_record(
    *,
    stream: ReviewerStream,
    payload: Any,
    file_lines: FileLines | None = None,
    file_text: Callable[[str], Sequence[str] | None] | None = None,
    evidence: Mapping[str, Any] | None = None,
    counted_at_end: bool = False,
) -> RecordResult:
    """Validate one `add_review_node` payload and store it, or count its rejection.

    Idempotent: the same payload recorded twice in one stream (a redelivered task, a retried
    tool call) yields the same node (unique on stream + payload hash). `evidence` is what an
    offline analyzer knows of its finding (rule, high precision), kept as `tags["analyzer"]`.
    A model's finding is written as it is made, so the page shows it at once: one statement
    when the stream's end counts its findings (`counted_at_end`: a model reviewer's run, see
    `stream_transition`), else one transaction of two (the node, the stream's count); a
    repeat is found by the unique key.
    """
    parsed = parse_node_payload(payload, file_lines=file_lines)
    if isinstance(parsed, Rejected):
        _count_rejections(stream, [parsed.reason])
        return RecordResult(node=None, rejection=parsed.reason)
    assert isinstance(parsed, Accepted)
    key = _payload_key(payload)
    node = _node_row(stream, parsed.node, key, file_text, evidence)
    # Inside a caller's transaction a repeat must not break it: a savepoint takes the refusal.
    alone = counted_at_end and not transaction.get_connection().in_atomic_block
    try:
        with nullcontext() if alone else transaction.atomic():
            node.save(force_insert=True)
            if not counted_at_end:
                ReviewerStream.objects.filter(pk=stream.pk).update(accepted=F("accepted") + 1)
            emit(stream.round.space_id, "review.node_added", node_id=node.pk)
    except IntegrityError:
        return RecordResult(node=ReviewNode.objects.get(stream=stream, payload_key=key))
    return RecordResult(node=node, created=True)


@dataclass(frozen=True)
class Finding:
    """One finding of a batch: the payload as a reviewer gives it, and an analyzer's evidence."""

    payload: Any
    evidence: Mapping[str, Any] | None = None


def node_record_many(
    *,
    stream: ReviewerStream,
    findings: Sequence[Finding],
    file_lines: FileLines | None = None,
    file_text: Callable[[str], Sequence[str] | None] | None = None,
    first_attempt: bool = False,
) -> list[RecordResult]:
    """`node_record` for a reviewer that has all its findings at once (an offline analyzer):
    the same validation, fingerprints, tags and events, written in one transaction of a few
    statements whatever their number. Idempotent like `node_record`: a payload the stream
    already holds yields its node. Results are in the order of `findings`.

    `first_attempt`: the stream's first run, under its step's claim, so it holds no finding
    yet (a later attempt starts by discarding the earlier one's): none is looked for, and its
    findings are counted when the run ends (`stream_transition`), not here."""
    results: list[RecordResult | None] = [None] * len(findings)
    rejections: list[str] = []
    fresh: dict[str, tuple[int, ReviewNode]] = {}  # payload key → first position, row
    repeats: list[tuple[int, str]] = []
    for i, finding in enumerate(findings):
        parsed = parse_node_payload(finding.payload, file_lines=file_lines)
        if isinstance(parsed, Rejected):
            rejections.append(parsed.reason)
            results[i] = RecordResult(node=None, rejection=parsed.reason)
            continue
        assert isinstance(parsed, Accepted)
        key = _payload_key(finding.payload)
        if key in fresh:
            repeats.append((i, key))
        else:
            fresh[key] = (i, _node_row(stream, parsed.node, key, file_text, finding.evidence))
    if rejections:
        _count_rejections(stream, rejections)
    # A first attempt writes its findings in one statement and reads none: no transaction
    # to open around it.
    with nullcontext() if first_attempt else transaction.atomic():
        stored = (
            {}
            if first_attempt or not fresh
            else {
                n.payload_key: n
                for n in ReviewNode.objects.filter(stream=stream, payload_key__in=list(fresh))
            }
        )
        new = [row for key, (_, row) in fresh.items() if key not in stored]
        # Keys unique per stream and the rows checked under this transaction: a concurrent
        # writer of the same stream is the same run re-delivered, and its rows are the same.
        created = ReviewNode.objects.bulk_create(new)
        if created and not first_attempt:
            ReviewerStream.objects.filter(pk=stream.pk).update(
                accepted=F("accepted") + len(created)
            )
        for node in created:
            emit(stream.round.space_id, "review.node_added", node_id=node.pk)
    for key, (i, row) in fresh.items():
        results[i] = RecordResult(node=stored.get(key, row), created=key not in stored)
    for i, key in repeats:
        results[i] = RecordResult(node=stored.get(key, fresh[key][1]))
    return [r for r in results if r is not None]


def _count_rejections(stream: ReviewerStream, reasons: Sequence[str]) -> None:
    """Count refused payloads on the stream; the first MAX_KEPT_REASONS reasons are kept."""
    with transaction.atomic():
        locked = ReviewerStream.objects.select_for_update().get(pk=stream.pk)
        kept = list(locked.rejection_reasons)
        locked.rejected = F("rejected") + len(reasons)
        locked.rejection_reasons = (kept + list(reasons))[: max(MAX_KEPT_REASONS, len(kept))]
        locked.save(update_fields=["rejected", "rejection_reasons"])


def _node_row(
    stream: ReviewerStream,
    p: NodePayload,
    key: str,
    file_text: Callable[[str], Sequence[str] | None] | None,
    evidence: Mapping[str, Any] | None,
) -> ReviewNode:
    """The unsaved row of an accepted payload, fingerprinted on the text around its anchor."""
    view = node_view_from_payload(p, node_id="new", agent=stream.agent, stream=stream.name)
    text = file_text(p.anchor.path) if (file_text and p.anchor) else None
    fix = p.fix
    return ReviewNode(
        space_id=stream.round.space_id,
        round_id=stream.round_id,
        stream=stream,
        payload_key=key,
        reasoning=p.reasoning or "",
        type=p.type.value,
        priority=p.priority.value,
        category=p.triage.category.value,
        severity=p.triage.severity.value,
        effort=p.triage.effort.value,
        path=p.anchor.path if p.anchor else "",
        start_line=p.anchor.start_line if p.anchor else None,
        end_line=p.anchor.end_line if p.anchor else None,
        side=p.anchor.side.value if p.anchor else "RIGHT",
        replacement_lines=list(fix.replacement_lines)
        if fix and fix.replacement_lines is not None
        else None,
        fix_diff=(fix.diff or "") if fix else "",
        fix_prompt=(fix.fix_prompt or "") if fix else "",
        confidence=p.confidence,
        title=p.title,
        body=p.body,
        map_anchor=p.map_anchor or "",
        triage_flags={
            "exploitable_externally": p.triage.exploitable_externally,
            "hot_path": p.triage.hot_path,
            "critical_path": p.triage.critical_path,
            "functional_effect": p.triage.functional_effect,
        },
        fingerprint=node_fingerprint(view, text),
        # Observations for other dimensions travel with the node; the lead pass routes them.
        tags=_initial_tags(p, evidence),
    )


def _initial_tags(p: NodePayload, evidence: Mapping[str, Any] | None) -> NodeTags:
    tags = NodeTags()
    if p.cross_notes:
        tags = tags.with_(cross_notes=[n.model_dump(mode="json") for n in p.cross_notes])
    if p.requirement_gap is not None:
        tags = tags.with_(requirement_gap=p.requirement_gap.value)
    if evidence:
        tags = tags.with_(analyzer=dict(evidence))
    return tags
