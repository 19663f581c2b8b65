"""SARIF logs from CI as reviewers of a round (docs/sarif.md).

`sarif_ingest` validates a whole log against the vendored SARIF 2.1.0 schema before anything is
written (an invalid log changes nothing), then records each run as a reviewer stream of kind
analyzer named after its tool. Results on lines the change adds become findings, one per rule
per file as the built-in analyzers group them, through `node_record_many`: the pipeline's own
validation, redaction, fingerprints and idempotency (a payload a stream already holds yields
its node, so the same log twice adds nothing). The rest are counted in the stream's coverage
note. The round's lead pass runs again over every node, so a SARIF finding merges with
Quorum's own by the dedup rule, and the verdict follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from guardrails.audit import Actor as AuditActor
from guardrails.audit import Target, audit_record
from reviews import sarif as schema
from reviews.agents.analyzers import ToolMatch, added_lines, grouped, ruff_mapping
from reviews.domain import sarif
from reviews.domain import types as t
from reviews.domain.errors import ApplicationError
from reviews.domain.precision import SARIF_AGENT_PREFIX
from reviews.domain.round_states import RoundState
from reviews.domain.stream_states import StreamState
from reviews.models import ReviewerStream, ReviewRound
from reviews.services.consolidation import round_consolidate
from reviews.services.nodes import Finding, node_record_many
from reviews.services.streams import stream_transition
from reviews.services.verdicts import verdict_follow
from reviews.sources.diffs import DiffParseError, parse_unified_diff

#: Results per upload. A log past it is refused whole (413) rather than cut at random.
MAX_RESULTS = 5000
#: Tools whose own rule table Quorum already has (its offline analyzers).
TOOL_MAPPINGS: dict[str, sarif.ToolMapping] = {"ruff": ruff_mapping}


class SarifInvalid(ApplicationError):
    """The document is not a SARIF 2.1.0 log; nothing was recorded."""

    code = "sarif_invalid"
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
        code="sarif_tool_name_taken",
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


def sarif_ingest(
    *, review_round: ReviewRound, document: Any, user: Any, request: Any = None
) -> list[RunOutcome]:
    """Record a SARIF log's runs on a finished round; see the module docstring. Raises
    SarifInvalid (400) for a document the schema refuses, 409 unless the round finished."""
    error = schema.schema_error(document)
    if error is not None:
        raise SarifInvalid(error)
    if review_round.state != RoundState.FINISHED:
        raise ApplicationError(
            f"Round {review_round.number} is {review_round.state}: upload SARIF once it has "
            "finished, so its results are merged and judged with the rest.",
            code="round_not_finished",
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
            code="round_superseded",
            http_status=409,
        )
    runs = sarif.read_runs(document)
    total = sum(len(r.results) for r in runs)
    if total > MAX_RESULTS:
        raise ApplicationError(
            f"The log has {total} results; at most {MAX_RESULTS} are accepted per upload. "
            "Nothing was recorded.",
            code="sarif_too_many_results",
            http_status=413,
        )
    try:
        changed = added_lines(parse_unified_diff(review_round.diff))
    except DiffParseError:
        changed = {}
    outcomes: list[RunOutcome] = []
    with transaction.atomic():
        # Uploads of one round take turns (two CI jobs, a retry racing the first attempt):
        # each sees what the other recorded, so none fails on the unique keys.
        list(ReviewRound.objects.select_for_update().filter(pk=review_round.pk).values_list("pk"))
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
            target=Target("reviewround", str(review_round.pk), f"round {review_round.number}"),
            payload={
                "space": review_round.space_id,
                "round": review_round.number,
                "runs": [o.as_dict() for o in outcomes],
            },
            request=request,
        )
        if added:
            round_consolidate(review_round=review_round)
            tools = ", ".join(o.tool for o in outcomes if o.added)
            verdict_follow(
                review_round=review_round,
                reason=f"{added} finding(s) from SARIF ({tools})",
                actor=user,
                request=request,
            )
    return outcomes
