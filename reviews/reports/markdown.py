"""The fixed-format markdown report built from what is stored now.

Rendered on demand rather than stored, so a person's resolve or dismiss is reflected at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC

from reviews import selectors
from reviews.domain import types as t
from reviews.domain.arbitration import arbitrate
from reviews.domain.outcomes import is_disabled, is_process_block
from reviews.domain.report import (
    ReportComment,
    ReportDecision,
    ReportInput,
    ReportMessage,
    ReportRound,
    ReportStep,
    ReportTicket,
    RequirementLine,
    RequirementsCheck,
    ReviewerLine,
    render_report,
)
from reviews.domain.report_figures import BudgetSummary, PanelSummary, budget_lines
from reviews.domain.reviewer_precision import RECENT_DECISIONS, calibrated
from reviews.domain.round_states import state_label
from reviews.domain.round_stats import BudgetReport
from reviews.domain.threads import Proposal, ProposalKind, Source, proposal_words
from reviews.domain.verdict import Verdict as DomainVerdict
from reviews.domain.verdict import node_verdict
from reviews.models import ReviewerStream, ReviewNode, ThreadMessage
from reviews.selectors import ReviewPage, review_spend, reviewer_notes, thread_rows
from reviews.services.axes import stream_dimension, stream_dimensions
from reviews.services.memory import remembered_words
from reviews.services.outside_agents import reviewer_labels


def waiting_for_request(stream: ReviewerStream) -> bool:
    """The stream is held by a process block until a person supplies the original request."""
    return stream.state == ReviewerStream.State.SKIPPED and is_process_block(stream.error)


def requirements_check(
    streams: Sequence[ReviewerStream], nodes: Sequence[ReviewNode] = ()
) -> RequirementsCheck | None:
    """The requirements reviewer's table, categorised findings and off-target judgement, or
    None when no requirements reviewer is part of the round."""
    stream = next((s for s in streams if s.dimension == t.Dimension.REQUIREMENTS.value), None)
    if stream is None:
        return None
    if waiting_for_request(stream):
        return RequirementsCheck(waiting=True)
    if stream.state == ReviewerStream.State.FAILED:
        return RequirementsCheck(failure=stream.error or "no usable output")
    if stream.state != ReviewerStream.State.DONE:
        return RequirementsCheck(unfinished=True)
    closing = stream.closing
    rows = closing.requirements if closing is not None else None
    return RequirementsCheck(
        answered=rows is not None,
        rows=[RequirementLine(r.requirement, r.covered, r.evidence) for r in rows or ()],
        findings=[
            (n.tags.requirement_gap.label, n.title, _where(n))
            for n in nodes
            if n.stream_id == stream.pk and n.tags.requirement_gap is not None
        ],
        off_target=closing.off_target_reason if closing is not None and closing.off_target else "",
    )


def _where(node: ReviewNode) -> str:
    if not node.path:
        return "PR-wide"
    return f"{node.path}:{node.start_line}" if node.start_line else node.path


def _named(views: list[t.NodeView]) -> list[t.NodeView]:
    """The views with outside agents' and people's identities as people read them ("agent
    claude-code for alice@example.com"), for the report's "found by"."""
    labels = reviewer_labels({name for view in views for name in view.reviewers})
    if not labels:
        return views
    return [
        replace(
            view,
            agent=labels.get(view.agent, view.agent),
            credited_agents=tuple(labels.get(a, a) for a in view.credited_agents),
        )
        for view in views
    ]


def report_markdown(page: ReviewPage, *, discussion: bool = False) -> str:
    """The round's report; with `discussion`, every thread's messages under what they
    discuss (otherwise a count each)."""
    if page.round is None:
        return "# Review: not started\n"
    views = list(page.views.values())
    cost, review_cost = review_spend(page.space, page.round)
    lines, disabled = _reviewer_lines(page, views)
    if page.verdict is not None:
        verdict = DomainVerdict(
            t.VerdictLevel(page.verdict.level), page.verdict.rule, page.verdict.confidence
        )
    else:
        verdict = node_verdict(views)
    panel = page.round.stats.panel
    # A prose-only closing is no statement: its words are not reported as a positive note.
    notes = [
        s.coverage_note
        for s in page.streams
        if s.coverage_note and (s.closing is None or s.closing.structured)
    ]
    reviewer_notes_of = reviewer_notes(space=page.space, streams=page.streams)
    return render_report(
        ReportInput(
            verdict=verdict,
            reviewers=lines,
            nodes=_named(views),
            arbitrations=[(d, arbitrate(d)) for d in page.disagreements],
            positive_notes=notes,
            panel=PanelSummary(**panel.model_dump()) if panel else None,
            comments=[
                ReportComment(
                    reviewer=c.reviewer, body=c.body, location=c.location, subject=subject
                )
                for c, subject in zip(
                    reviewer_notes_of.comments, _comment_subjects(page.streams), strict=True
                )
            ],
            tickets=[_report_ticket(tv) for tv in reviewer_notes_of.tickets],
            round=_report_round(page),
            requirements=requirements_check(page.streams, page.nodes),
            walkthrough=[
                ReportStep(title=s.title, paths=s.paths, explanation=s.explanation)
                for s in page.round.stats.walkthrough_steps or []
            ],
            walkthrough_text=page.round.stats.walkthrough or "",
            budget=budget_summary(page.round.stats.budget),
            disabled=disabled,
            unread=page.round.stats.unread_files or (),
            decisions=[
                _report_decision(node)
                for node in page.nodes
                if node.decided_at is not None and node.duplicate_of_id is None
            ],
            fast_mode=bool(page.round.facts and page.round.facts.fast_mode),
            cost=cost,
            pr_cost=review_cost.total,
            threads=report_threads(thread_rows(space=page.space, round_of=page)),
            discussion=discussion,
            # What the verdict read: each confidence through its reviewer's calibration.
            calibrated=calibrated(
                views,
                selectors.reviewer_calibrations(
                    page.space.workspace_id, exclude_round=page.round.pk
                ),
            ),
            delta_labels={
                str(n.pk): label
                for n in page.nodes
                if (label := page.delta_view.label(n.fingerprint))
            },
        )
    )


def _reviewer_lines(
    page: ReviewPage, views: list[t.NodeView]
) -> tuple[list[ReviewerLine], list[str]]:
    """Each reviewer's line in the report, and the reviewers disabled for the round (by the
    workspace, or skipped for it)."""
    assert page.round is not None
    lines = []
    disabled = list(page.round.stats.reviewers_disabled or [])
    named = reviewer_labels({stream.agent for stream in page.streams})
    # Each reviewer's precision over its most recent decisions by people, workspace-wide.
    precision = {
        r.reviewer: r.precision
        for r in selectors.reviewer_precision(page.space.workspace_id, last=RECENT_DECISIONS)
    }
    for stream in page.streams:
        if stream.kind == ReviewerStream.Kind.VERIFIER:
            continue
        if stream.state == ReviewerStream.State.SKIPPED and is_disabled(stream.error):
            disabled.append(stream.name)
            continue
        lines.append(_reviewer_line(page, stream, views, named, precision))
    return lines, disabled


def _reviewer_line(
    page: ReviewPage,
    stream: ReviewerStream,
    views: list[t.NodeView],
    named: dict[str, str],
    precisions: dict,
) -> ReviewerLine:
    """One reviewer's line: waiting for the request, failed, or its verdict and coverage
    (`named`: reviewers' labels by agent; `precisions`: their precision by stream name)."""
    assert page.round is not None
    agent = named.get(stream.agent, stream.agent)
    precision = precisions.get(stream.name)
    dimensions = stream_dimensions(stream, page.round.facts)
    spec = t.ReviewerSpec(
        stream_dimension(stream),
        with_security_check=len(dimensions) > 1 and t.Dimension.SECURITY in dimensions,
    )
    if waiting_for_request(stream):
        return ReviewerLine(spec, None, agent=agent, waiting=True, precision=precision)
    if stream.state == ReviewerStream.State.FAILED:
        return ReviewerLine(
            spec,
            None,
            failure=stream.error,
            agent=agent,
            precision=precision,
            turns=_turns(stream),
        )
    own = [v for v in views if v.stream == stream.name]
    level = node_verdict(own).level
    closing = stream.closing
    return ReviewerLine(
        spec,
        t.REVIEW_STATE_FOR_VERDICT[level],
        agent=agent,
        covered=[(c.area, c.reviewed_no_issue) for c in closing.covered]
        if closing is not None
        else (),
        prose_only=stream.kind == ReviewerStream.Kind.MODEL
        and stream.state == ReviewerStream.State.DONE
        and (closing is None or not closing.structured),
        precision=precision,
        turns=_turns(stream),
    )


def _report_ticket(tv: selectors.TicketView) -> ReportTicket:
    return ReportTicket(
        reviewer=tv.reviewer,
        title=tv.ticket.title,
        body=tv.ticket.body,
        status=tv.state.label,
        round_number=tv.round_number,
        issue_url=tv.ticket.issue_url,
        subject=f"note:{tv.ticket.stream_id}:{tv.ticket.note_index}",
    )


def _report_round(page: ReviewPage) -> ReportRound:
    review_round = page.round
    assert review_round is not None
    return ReportRound(
        number=review_round.number,
        of=len(page.rounds),
        head=review_round.head_sha,
        state=state_label(review_round.state).lower(),
        rerun_of=next((r.number for r in page.rounds if r.pk == review_round.rerun_of_id), None),
        delta=page.delta_view.summary,
        gone=[f"{g.title} `{g.location}` ({g.priority})" for g in page.delta_view.gone],
    )


def _report_decision(node: ReviewNode) -> ReportDecision:
    return ReportDecision(
        status=node.status.replace("_", " ").capitalize(),
        priority=node.priority,
        title=node.title,
        location=_where(node),
        by=node.decided_by.email if node.decided_by else "a former member",
        reason=node.decision_reason,
        remembered=remembered_words(node),
    )


def budget_summary(report: BudgetReport | None) -> BudgetSummary | None:
    """The round's budget report as the report and the page show it."""
    if report is None:
        return None
    return BudgetSummary(
        round_budget=report.round_budget,
        pr_budget=report.pr_budget,
        pr_spent_before=report.pr_spent_before,
        spent=report.spent,
        skipped=[s.reason for s in report.skipped],
    )


def budget_page_lines(report: BudgetReport | None) -> list[str]:
    """The report's Budget lines, for the review page's process card: only when the round
    skipped something for its budgets (a round that fitted has nothing to explain)."""
    summary = budget_summary(report)
    if summary is None or not summary.skipped:
        return []
    return [line.removeprefix("- ") for line in budget_lines(summary)]


def _comment_subjects(streams: Sequence[ReviewerStream]) -> list[str]:
    """The thread key of each reviewer comment, in reviewer_notes' order (a note's key is its
    index among its stream's notes, tickets included)."""
    return [
        f"note:{stream.pk}:{index}"
        for stream in streams
        for index, note in enumerate(stream.notes or [])
        if isinstance(note, dict) and note.get("kind") == "comment"
    ]


def report_threads(messages: Sequence[ThreadMessage]) -> dict[str, list[ReportMessage]]:
    """The messages as the report quotes them, by thread."""
    threads: dict[str, list[ReportMessage]] = {}
    for m in messages:
        marks = []
        if m.posted_at is not None:
            marks.append("posted on GitHub")
        if m.edited_at is not None:
            marks.append("edited")
        if m.proposal_kind:
            proposal = Proposal(
                ProposalKind(m.proposal_kind),
                priority=t.Priority(m.proposal_priority) if m.proposal_priority else None,
            )
            marks.append(f"proposes to {proposal_words(proposal)}: {m.proposal_state}")
        threads.setdefault(m.subject, []).append(
            ReportMessage(
                author=m.author_label,
                body=m.body,
                when=m.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                from_github=m.source == Source.GITHUB,
                marks=marks,
            )
        )
    return threads


def _turns(stream: ReviewerStream) -> tuple[int, int] | None:
    """A model reviewer's model calls and its turn budget (None: it made none)."""
    return (stream.turns, stream.turn_budget) if stream.turn_budget else None
