"""The versioned JSON form of a review, shared by `manage.py review --format json` and the API.

Its schema, field by field, is `ReviewJson` in reviews/api/schemas.py, published in
/api/v1/openapi.json; tests/test_openapi_contract.py checks a real review against it.

Schema `quorum.review/v1`:
- `schema`, `space` {id, status}, `pull_request` {repository, number, base_ref, head_ref,
  base_sha, head_sha, title}, `round` {number, tier, state, stage, error}
- `verdict` {level: ship|hold|block, state: APPROVED|CHANGES_REQUESTED|BLOCKED, confidence,
  rule} or null while the round runs; the current verdict, decided again after every decision.
  `confidence` is null when the level rests on missing data (a gated axis nobody computed);
  `rule` says what decided it
- `axes`: [{axis, result, gated, source, details}]
- `cohorts`: [...] (empty until the code index computes them)
- `nodes`: [{id, stream, reviewers, type, priority, triage {category, severity, effort},
  anchor {path, start_line, end_line, side} | null, status, confirmations [{agent, lens,
  verdict}], fingerprint, duplicate_of, duplicates, confidence, title, body,
  fix {replacement_lines, diff, fix_prompt}, tags}]
- `disagreements`: [{path, first, second, reasons, key, first_reviewers, second_reviewers}]
- `streams`: [{name, agent, kind, state, accepted, rejected, tokens_in, tokens_out, attempts,
  refused_calls, redactions, error, coverage_note, closing}]
- `stats`: the round's statistics (classification, panel, critic, failures)
- `notes`: what reviewers left besides findings. `comments`: [{reviewer, stream, body, path,
  line}] of this round; `tickets`: [{id, round, reviewer, stream, title, body, status (open |
  dismissed | requested | created), status_label (in words), reason, decided_by, decided_at,
  issue_number, issue_url, approval_request}] of every round of the review
- `round` also has `state_label` (in words), `head_sha`, `rerun_of` (the round it re-runs) and
  `delta`: {baseline (the last finished round of a different head, or null), same_head_as (the
  last finished round of the same head, or null), summary (in words), new, still_open, gone
  (counts, null without a baseline), gone_findings [{fingerprint, title, location, priority}]};
  each node has `delta`: "new", "still open" or null
- `rounds`: every round of the review [{number, state, state_label, head_sha, tier, verdict
  (level or null), rerun_of, superseded_by, created_at, finished_at, delta (its summary)}];
  `round` is the one shown: the newest, or the last finished one when the newest failed or was
  cancelled
- `space` also has `publication` {round, state (posted | claimed | uncertain), url,
  github_review_id, event, requested_by, approved_by, posted_at} or null: the shown round's one
  GitHub review
- `spend`: what the model calls cost {round: {total, by_role, by_name, by_model} | null,
  pull_request: totals over every round}; totals are {input_tokens (cached included),
  cached_input_tokens, output_tokens, requests, calls, counted_locally, cost (decimal string or
  null without a price), unpriced (models without a price)}
- `space` also has `flagged_for_human` and `flag` {flagged_at, reason} or null: two rounds in a
  row ended without approval, so a person should decide (only a person clears it)
- `threads`: the shown round's conversation, one entry per thread that has messages
  [{subject (node:<id>, disagreement:<id>, note:<stream>:<n>), node, messages [{id, subject,
  node, source (person | agent | reviewer | github), author, body, created_at, edited_at,
  revisions, in_reply_to, github {comment_id, url, posted_at} | null, proposal {kind, priority,
  fix, state, decided_by, decided_at} | null}]}]
Fields are only ever added within v1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reviews import sarif as sarif_schema
from reviews.domain import types as t
from reviews.domain.round_states import state_label
from reviews.domain.sarif import sarif_log
from reviews.domain.spend import Row, Spend, Totals
from reviews.models import PublishRecord, ReviewerStream, ReviewRound, ThreadMessage
from reviews.selectors import (
    DeltaView,
    ReviewPage,
    review_spend,
    reviewer_notes,
    thread_rows,
)

SCHEMA = "quorum.review/v1"


def review_sarif(page: ReviewPage) -> dict[str, Any]:
    """The shown round's findings as a SARIF 2.1.0 log (docs/sarif.md): the page's download,
    GET …/sarif and `manage.py review --format sarif`."""

    return sarif_log(review_json(page), schema_uri=sarif_schema.SCHEMA_URI)


def review_json(page: ReviewPage) -> dict[str, Any]:
    space, review_round = page.space, page.round
    merged = _merged(page)
    return {
        "schema": SCHEMA,
        "space": _space_json(page),
        "pull_request": _pull_request_json(page),
        "round": None if review_round is None else _round_json(page, review_round),
        "rounds": rounds_json(page),
        "verdict": _verdict_json(page),
        "axes": [
            {
                "axis": a.axis,
                "result": a.result,
                "gated": a.gated,
                "source": a.source,
                "details": a.details,
            }
            for a in page.axes
        ],
        "cohorts": (review_round.stats.to_json().get("cohorts", []) if review_round else []),
        "nodes": [_node(n, page, merged.get(n.pk, [])) for n in page.nodes],
        "disagreements": [
            {
                "path": d.path,
                "first": int(d.first.id),
                "second": int(d.second.id),
                "reasons": list(d.reasons),
                # Each side with every reviewer holding it; `key` is what a decision names.
                "key": int(d.key),
                "first_reviewers": list(d.first_reviewers),
                "second_reviewers": list(d.second_reviewers),
            }
            for d in page.disagreements
        ],
        "streams": [_stream_json(s) for s in page.streams],
        # The round's statistics; the pipeline's control state (facts, done stages) has
        # columns of its own and is not part of the review.
        "stats": review_round.stats.to_json() if review_round else {},
        "notes": _notes(page),
        "spend": review_spend_json(page),
        "threads": threads_json(thread_rows(space=space, round_of=page)),
    }


def _space_json(page: ReviewPage) -> dict[str, Any]:
    space = page.space
    return {
        "id": space.pk,
        "status": space.status,
        "flagged_for_human": space.flagged_for_human,
        "flag": {
            "flagged_at": space.flagged_at.isoformat() if space.flagged_at else None,
            "reason": space.flag_reason,
        }
        if space.flagged_for_human
        else None,
        "publication": _publication(page.round),
    }


def _pull_request_json(page: ReviewPage) -> dict[str, Any]:
    pr = page.space.pull_request
    return {
        "repository": str(pr.repository),
        "number": pr.number,
        "base_ref": pr.base_ref,
        "head_ref": pr.head_ref,
        "base_sha": pr.base_sha,
        "head_sha": pr.head_sha,
        "title": pr.title,
    }


def _round_json(page: ReviewPage, review_round: ReviewRound) -> dict[str, Any]:
    return {
        "number": review_round.number,
        "tier": review_round.tier,
        "state": review_round.state,
        "stage": review_round.stage,
        "error": review_round.error,
        "state_label": state_label(review_round.state),
        "head_sha": review_round.head_sha,
        "rerun_of": _number_of(page, review_round.rerun_of_id),
        "delta": _delta(page.delta_view),
    }


def _verdict_json(page: ReviewPage) -> dict[str, Any] | None:
    if page.verdict is None:
        return None
    level = t.VerdictLevel(page.verdict.level)
    return {
        "level": level.value,
        "state": t.REVIEW_STATE_FOR_VERDICT[level].value,
        "confidence": page.verdict.confidence,
        "rule": page.verdict.rule,
    }


def _stream_json(s: ReviewerStream) -> dict[str, Any]:
    return {
        "name": s.name,
        "agent": s.agent,
        "kind": s.kind,
        "state": s.state,
        "accepted": s.accepted,
        "rejected": s.rejected,
        "tokens_in": s.tokens_in,
        "tokens_out": s.tokens_out,
        "attempts": s.attempts,
        "refused_calls": s.refused_calls,
        "redactions": s.redactions,
        "error": s.error,
        "coverage_note": s.coverage_note,
        "closing": s.closing.model_dump(mode="json") if s.closing is not None else None,
    }


def review_spend_json(page: ReviewPage) -> dict[str, Any]:
    of_round, of_review = review_spend(page.space, page.round)
    return {
        "round": spend_json(of_round) if of_round is not None else None,
        "pull_request": totals_json(of_review.total),
    }


def totals_json(totals: Totals) -> dict[str, Any]:
    return {
        "input_tokens": totals.input_tokens,
        "cached_input_tokens": totals.cached_input_tokens,
        "output_tokens": totals.output_tokens,
        "requests": totals.requests,
        "calls": totals.calls,
        "counted_locally": totals.counted_locally,
        "cost": str(totals.cost) if totals.cost is not None else None,
        "unpriced": list(totals.unpriced),
    }


def _rows(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [{"key": r.key, **totals_json(r.totals)} for r in rows]


def spend_json(spend: Spend, *, periods: bool = False) -> dict[str, Any]:
    """A spend in the API's shape (`SpendOut`; with `periods`, `WorkspaceSpendOut`)."""
    out = {
        "total": totals_json(spend.total),
        "by_role": _rows(spend.by_role),
        "by_name": _rows(spend.by_name),
        "by_model": _rows(spend.by_model),
    }
    if periods:
        out |= {"by_day": _rows(spend.by_day), "by_month": _rows(spend.by_month)}
    return out


def _publication(review_round: Any) -> dict[str, Any] | None:

    if review_round is None:
        return None
    record = (
        PublishRecord.objects.filter(round=review_round, legacy_duplicate=False)
        .exclude(state=PublishRecord.State.FAILED)
        .select_related("requested_by", "approved_by")
        .first()
    )
    if record is None:
        return None
    return {
        "round": review_round.number,
        "state": record.state,
        "url": record.html_url or None,
        "github_review_id": record.github_review_id,
        "event": record.event or None,
        "requested_by": record.requested_by.email if record.requested_by else None,
        "approved_by": record.approved_by.email if record.approved_by else None,
        "posted_at": record.posted_at.isoformat() if record.posted_at else None,
    }


def _notes(page: ReviewPage) -> dict[str, Any]:
    notes = reviewer_notes(space=page.space, streams=page.streams)
    return {
        "comments": [
            {
                "reviewer": c.reviewer,
                "stream": c.stream,
                "body": c.body,
                "path": c.path or None,
                "line": c.line,
            }
            for c in notes.comments
        ],
        "tickets": [
            {
                "id": tv.ticket.pk,
                "round": tv.round_number,
                "reviewer": tv.reviewer,
                "stream": tv.ticket.stream.name,
                "title": tv.ticket.title,
                "body": tv.ticket.body,
                "status": tv.ticket.status,
                "status_label": tv.state.label,
                "reason": tv.ticket.reason,
                "decided_by": tv.ticket.decided_by.email if tv.ticket.decided_by else None,
                "decided_at": tv.ticket.decided_at.isoformat() if tv.ticket.decided_at else None,
                "issue_number": tv.ticket.issue_number,
                "issue_url": tv.ticket.issue_url or None,
                "approval_request": tv.ticket.approval_request_id,
            }
            for tv in notes.tickets
        ],
    }


def _number_of(page: ReviewPage, round_id: int | None) -> int | None:
    return next((r.number for r in page.rounds if r.pk == round_id), None)


def _delta(d: DeltaView) -> dict[str, Any]:
    return {
        "baseline": d.baseline,
        "same_head_as": d.same_head_as,
        "summary": d.summary,
        "new": len(d.delta.new) if d.delta else None,
        "still_open": len(d.delta.persisting) if d.delta else None,
        "gone": len(d.delta.gone) if d.delta else None,
        "gone_findings": [
            {
                "fingerprint": g.fingerprint,
                "title": g.title,
                "location": g.location,
                "priority": g.priority,
            }
            for g in d.gone
        ],
    }


def rounds_json(page: ReviewPage) -> list[dict[str, Any]]:
    """Every round of the review, oldest first (also the API's round list)."""
    return [
        {
            "number": s.number,
            "state": s.round.state,
            "state_label": s.state_label,
            "head_sha": s.round.head_sha,
            "tier": s.round.tier,
            "verdict": s.verdict_level,
            "rerun_of": _number_of(page, s.round.rerun_of_id),
            "superseded_by": _number_of(page, s.round.superseded_by_id),
            "created_at": s.round.created_at.isoformat(),
            "finished_at": s.round.finished_at.isoformat() if s.round.finished_at else None,
            "error": s.round.error,
            "delta": s.delta.summary,
        }
        for s in page.round_summaries
    ]


def _merged(page: ReviewPage) -> dict[int, list[int]]:
    """Each canonical finding's merged rows, by id."""
    merged: dict[int, list[int]] = {}
    for node in page.nodes:
        if node.duplicate_of_id is not None:
            merged.setdefault(node.duplicate_of_id, []).append(node.pk)
    return merged


def _node(node, page: ReviewPage, duplicates: list[int]) -> dict[str, Any]:
    view = page.views[node.pk]
    return {
        "delta": page.delta_view.label(node.fingerprint) or None,
        "id": node.pk,
        "stream": node.stream.name,
        "reviewers": list(view.reviewers),
        "type": node.type,
        "priority": node.priority,
        "triage": {"category": node.category, "severity": node.severity, "effort": node.effort},
        "anchor": {
            "path": node.path,
            "start_line": node.start_line,
            "end_line": node.end_line,
            "side": node.side,
        }
        if node.path
        else None,
        "status": node.status,
        "confirmations": [
            {"agent": c.agent, "lens": c.lens, "verdict": c.verdict}
            for c in node.confirmations.all()
        ],
        "fingerprint": node.fingerprint,
        "duplicate_of": node.duplicate_of_id,
        "duplicates": sorted(duplicates),
        "confidence": node.confidence,
        "title": node.title,
        "body": node.body,
        "fix": {
            "replacement_lines": node.replacement_lines,
            "diff": node.fix_diff or None,
            "fix_prompt": node.fix_prompt or None,
        },
        "tags": node.tags.to_json(),
    }


def _when(value: Any) -> str | None:
    return value.isoformat() if value else None


def thread_message_json(message: ThreadMessage) -> dict[str, Any]:
    """One message as the API, MCP and the export show it (`ThreadMessageOut`). `github` says
    where it stands on GitHub: a reply written there (source github) or a message Quorum posted
    there (`posted_at`); `revisions` counts the earlier texts an edit kept."""
    revisions = getattr(message, "revision_count", None)
    if revisions is None:
        revisions = message.revisions.count()
    decided_by = message.proposal_decided_by
    return {
        "id": message.pk,
        "subject": message.subject,
        "node": message.node_id,
        "source": message.source,
        "author": message.author_label,
        "body": message.body,
        "created_at": message.created_at.isoformat(),
        "edited_at": _when(message.edited_at),
        "revisions": revisions,
        "in_reply_to": message.in_reply_to_id,
        "github": {
            "comment_id": message.github_comment_id,
            "url": message.github_url or None,
            "posted_at": _when(message.posted_at),
        }
        if message.github_comment_id is not None
        else None,
        "proposal": {
            "kind": message.proposal_kind,
            "priority": message.proposal_priority or None,
            "fix": message.proposal_fix or None,
            "state": message.proposal_state,
            "decided_by": (decided_by.email or decided_by.get_username()) if decided_by else None,
            "decided_at": _when(message.proposal_decided_at),
        }
        if message.proposal_kind
        else None,
    }


def threads_json(messages: Sequence[ThreadMessage]) -> list[dict[str, Any]]:
    """Messages grouped by thread (`ThreadOut`), threads in the order they were started."""
    threads: dict[str, dict[str, Any]] = {}
    for message in messages:
        thread = threads.setdefault(
            message.subject, {"subject": message.subject, "node": message.node_id, "messages": []}
        )
        thread["messages"].append(thread_message_json(message))
    return list(threads.values())
