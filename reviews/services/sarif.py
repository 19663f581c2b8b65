"""SARIF logs from CI as reviewers of a round (docs/sarif.md).

`sarif_accept` (the request) validates a whole log against the vendored SARIF 2.1.0 schema,
checks the round and the size, and stores it as a queued `SarifUpload`; an invalid log changes
nothing. `sarif_process` (a task) records each run as a reviewer stream of kind analyzer named
after its tool. Results on lines the change adds become findings, one per rule
per file as the built-in analyzers group them, through `node_record_many`: the pipeline's own
validation, redaction, fingerprints and idempotency (a payload a stream already holds yields
its node, so the same log twice adds nothing). The rest are counted in the stream's coverage
note. The round's lead pass runs again over every node, so a SARIF finding merges with
Quorum's own by the dedup rule, and the verdict follows.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from config.background import QueueUnavailable, submit_now
from guardrails.audit import Actor as AuditActor
from guardrails.audit import Target, audit_record
from reviews import sarif as schema
from reviews.agents.analyzers import ToolMatch, added_lines, grouped
from reviews.agents.ruff_analyzer import ruff_mapping
from reviews.domain import sarif
from reviews.domain import types as t
from reviews.domain.precision import SARIF_AGENT_PREFIX
from reviews.domain.round_states import RoundState
from reviews.domain.stream_states import StreamState
from reviews.models import ReviewerStream, ReviewRound, SarifUpload, Verdict
from reviews.services.consolidation import round_consolidate
from reviews.services.node_recording import Finding, node_record_many
from reviews.services.streams import stream_transition
from reviews.services.verdicts import verdict_follow
from reviews.sources.diffs import DiffParseError, parse_unified_diff

#: Results per upload. A log past it is refused whole (413) rather than cut at random.
MAX_RESULTS = 5000
#: Tools whose own rule table Quorum already has (its offline analyzers).
TOOL_MAPPINGS: dict[str, sarif.ToolMapping] = {"ruff": ruff_mapping}


class SarifInvalid(ApplicationError):
    """The document is not a SARIF 2.1.0 log; nothing was recorded."""

    code = ErrorCode.SARIF_INVALID
    # The route takes any JSON object; the log's own schema is a rule on top, so a log it
    # refuses is a 400 like any other rule's refusal (a 422 is for a body the API's schema
    # refuses).
    http_status = 400

    def __init__(self, error: schema.SchemaError) -> None:
        super().__init__(f"Not a valid SARIF 2.1.0 log: {error}. Nothing was recorded.")
        self.error = error

    def body(self) -> dict[str, Any]:
        """The API's 400 shape (`detail`, `code`), plus the failing place as a JSON path and
        as a list of keys, and the schema's message on its own."""
        return {
            "detail": self.message,
            "code": self.code,
            "path": self.error.path,
            "loc": list(self.error.location),
            "schema_error": self.error.message,
        }


@dataclass(frozen=True)
class RunOutcome:
    tool: str
    stream: str
    results: int
    on_change: int
    findings: int
    added: int
    already: int
    outside: int
    rejected: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "stream": self.stream,
            "results": self.results,
            "on_change": self.on_change,
            "findings": self.findings,
            "added": self.added,
            "already": self.already,
            "outside": self.outside,
            "rejected": self.rejected,
        }


def _stream_for(review_round: ReviewRound, tool: str) -> ReviewerStream:
    agent = f"{SARIF_AGENT_PREFIX}{tool.lower()}"[:60]
    names = (tool[:60], f"{tool[:51]} (SARIF)")
    for name in names:
        stream, created = ReviewerStream.objects.get_or_create(
            round=review_round,
            name=name,
            defaults={"agent": agent, "kind": t.StreamKind.ANALYZER.value},
        )
        if stream.agent != agent:
            continue  # a built-in reviewer of the same name: this run gets its own stream
        if created:
            stream_transition(stream, StreamState.RUNNING)
            stream_transition(stream, StreamState.DONE)
        return stream
    raise ApplicationError(
        f"Round {review_round.number} already has reviewers named {names[0]!r} and "
        f"{names[1]!r}: rename the tool in the log.",
        code=ErrorCode.SARIF_TOOL_NAME_TAKEN,
        http_status=409,
    )


def _note(run: sarif.SarifRun, outcome: RunOutcome) -> str:
    version = f" {run.version}" if run.version else ""
    return (
        f"SARIF from {run.tool}{version}: {outcome.results} result(s), {outcome.on_change} on "
        f"lines the change adds as {outcome.findings} finding(s) (one per rule per file), "
        f"{outcome.outside} outside the change (counted, not shown)"
        + (f", {outcome.rejected} refused" if outcome.rejected else "")
        + "."
    )


def _check(review_round: ReviewRound, document: Any) -> int:
    """The refusals that hold at upload and again when the task runs; the log's results."""
    error = schema.schema_error(document)
    if error is not None:
        raise SarifInvalid(error)
    if review_round.state != RoundState.FINISHED:
        raise ApplicationError(
            f"Round {review_round.number} is {review_round.state}: upload SARIF once it has "
            "finished, so its results are merged and judged with the rest.",
            code=ErrorCode.ROUND_NOT_FINISHED,
            http_status=409,
        )
    newest = (
        ReviewRound.objects.filter(space_id=review_round.space_id)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    if newest is not None and newest != review_round.number:
        # An older round's verdict no longer decides anything: its findings would be judged
        # against a diff that moved on.
        raise ApplicationError(
            f"Round {review_round.number} is not the newest (round {newest} is): upload the "
            "SARIF log of the current head for that round. Nothing was recorded.",
            code=ErrorCode.ROUND_SUPERSEDED,
            http_status=409,
        )
    total = sum(len(r.results) for r in sarif.read_runs(document))
    if total > MAX_RESULTS:
        raise ApplicationError(
            f"The log has {total} results; at most {MAX_RESULTS} are accepted per upload. "
            "Nothing was recorded.",
            code=ErrorCode.SARIF_TOO_MANY_RESULTS,
            http_status=413,
        )
    return total


def sarif_accept(
    *, review_round: ReviewRound, document: Any, user: Any, request: Any = None
) -> SarifUpload:
    """Store a SARIF log for a finished round and queue its processing. Raises SarifInvalid
    (400) for a document the schema refuses, 409 unless the round finished and is the newest,
    413 past MAX_RESULTS; nothing is stored then."""
    total = _check(review_round, document)
    upload = SarifUpload.objects.create(
        round=review_round,
        uploaded_by=user if getattr(user, "is_authenticated", False) else None,
        document=document,
        results=total,
    )
    audit_record(
        action="sarif.received",
        actor=AuditActor.of(user),
        workspace=review_round.space.workspace,
        target=Target.of(review_round, f"round {review_round.number}"),
        payload={"space": review_round.space_id, "round": review_round.number, "upload": upload.pk},
        request=request,
    )
    transaction.on_commit(lambda: _queue(upload.pk))
    return upload


def _queue(upload_id: int) -> None:

    # Stored and still queued if the broker is down: the sweeper queues it once it is back.
    with suppress(QueueUnavailable):
        submit_now("reviews.sarif_process", upload_id)


def sarif_process(*, upload_id: int) -> SarifUpload:
    """Record a queued upload on its round (see the module docstring). Idempotent: an upload
    that is no longer queued is left as it is, and the same log twice adds nothing. A round
    that moved on since the upload fails the upload with the reason."""
    try:
        with transaction.atomic():
            upload = SarifUpload.objects.select_for_update().get(pk=upload_id)
            if upload.state != SarifUpload.State.QUEUED:
                return upload
            # Uploads of one round take turns (two CI jobs, a retry racing the first attempt):
            # each sees what the other recorded, so none fails on the unique keys.
            review_round = (
                ReviewRound.objects.select_for_update(of=("self",))
                .select_related("space__workspace")
                .get(pk=upload.round_id)
            )
            _check(review_round, upload.document)
            outcomes = _record(review_round, upload.document, upload.uploaded_by)
            verdict = Verdict.objects.filter(round=review_round).values_list("level", flat=True)
            sarif_upload_settle(
                upload_id=upload_id,
                state=SarifUpload.State.DONE,
                runs=[o.as_dict() for o in outcomes],
                verdict=verdict.first() or "",
            )
    except ApplicationError as exc:
        sarif_upload_settle(
            upload_id=upload_id, state=SarifUpload.State.FAILED, error=exc.message[:500]
        )
    return SarifUpload.objects.get(pk=upload_id)


def sarif_upload_settle(
    *,
    upload_id: int,
    state: SarifUpload.State,
    runs: list[dict[str, Any]] | None = None,
    verdict: str = "",
    error: str = "",
) -> bool:
    """The one move of an upload's state: queued → done (with what it became) or failed (with
    why). False when it was no longer queued (another delivery settled it first)."""
    assert state != SarifUpload.State.QUEUED
    return bool(
        SarifUpload.objects.filter(pk=upload_id, state=SarifUpload.State.QUEUED).update(
            state=state,
            runs=runs or [],
            verdict=verdict,
            error=error,
            finished_at=timezone.now(),
        )
    )


def sarif_uploads_resume(*, older_than: float) -> int:
    """Queue again the uploads still queued `older_than` seconds after they arrived (their
    message was lost, or the worker died while recording them)."""
    cutoff = timezone.now() - timedelta(seconds=older_than)
    ids = list(
        SarifUpload.objects.filter(state=SarifUpload.State.QUEUED, created_at__lt=cutoff)
        .order_by("pk")
        .values_list("pk", flat=True)[:100]
    )
    for upload_id in ids:
        _queue(upload_id)
    return len(ids)


def _record(review_round: ReviewRound, document: Any, user: Any) -> list[RunOutcome]:
    runs = sarif.read_runs(document)
    try:
        changed = added_lines(parse_unified_diff(review_round.diff))
    except DiffParseError:
        changed = {}
    outcomes: list[RunOutcome] = []
    with transaction.atomic():
        for run in runs:
            stream = _stream_for(review_round, run.tool)
            mapping = TOOL_MAPPINGS.get(run.tool.lower())
            matches = []
            for result in run.results:
                path = sarif.changed_path(result.uri, changed)
                if not sarif.on_change(result, path, changed):
                    continue
                assert path is not None
                payload, evidence = sarif.result_payload(
                    result, tool=run.tool, path=path, tool_mapping=mapping
                )
                anchor = payload["anchor"]
                matches.append(
                    ToolMatch(
                        rule=evidence["rule"],
                        path=path,
                        start=anchor["start_line"],
                        end=anchor["end_line"],
                        payload=payload,
                        evidence=evidence,
                    )
                )
            # One finding per rule per file, like the built-in analyzers (precision.group_hits).
            grouped_findings, _ = grouped(run.tool, matches)
            findings = [Finding(payload=f.payload, evidence=f.evidence) for f in grouped_findings]
            recorded = node_record_many(stream=stream, findings=findings)
            outcome = RunOutcome(
                tool=run.tool,
                stream=stream.name,
                results=len(run.results),
                on_change=len(matches),
                findings=len(findings),
                added=sum(r.created for r in recorded),
                already=sum(r.node is not None and not r.created for r in recorded),
                outside=len(run.results) - len(matches),
                rejected=sum(r.node is None for r in recorded),
            )
            ReviewerStream.objects.filter(pk=stream.pk).update(coverage_note=_note(run, outcome))
            outcomes.append(outcome)
        added = sum(o.added for o in outcomes)
        audit_record(
            action="sarif.uploaded",
            actor=AuditActor.of(user),
            workspace=review_round.space.workspace,
            target=Target.of(review_round, f"round {review_round.number}"),
            payload={
                "space": review_round.space_id,
                "round": review_round.number,
                "runs": [o.as_dict() for o in outcomes],
            },
        )
        if added:
            round_consolidate(review_round=review_round)
            tools = ", ".join(o.tool for o in outcomes if o.added)
            verdict_follow(
                review_round=review_round,
                reason=f"{added} finding(s) from SARIF ({tools})",
                actor=user,
            )
    return outcomes
