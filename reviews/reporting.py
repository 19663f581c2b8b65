"""The fixed-format markdown report built from what is stored now.

Rendered on demand rather than stored, so a person's resolve or dismiss is reflected at once.
"""

from __future__ import annotations

from reviews.domain import types as t
from reviews.domain.arbitration import arbitrate
from reviews.domain.report import (
    PanelSummary,
    ReportComment,
    ReportInput,
    ReportRound,
    ReportTicket,
    ReviewerLine,
    render_report,
)
from reviews.domain.round_states import state_label
from reviews.domain.verdict import Verdict as DomainVerdict
from reviews.domain.verdict import node_verdict
from reviews.models import ReviewerStream
from reviews.selectors import ReviewPage, reviewer_notes

# Offline analyzers report on a dimension too: bandit is a security reviewer.
_ANALYZER_DIMENSIONS = {
    "ruff": t.Dimension.QUALITY,
    "bandit": t.Dimension.SECURITY,
    "secrets": t.Dimension.SECURITY,
}


def stream_dimension(stream: ReviewerStream) -> t.Dimension:
    for candidate in (stream.dimension, stream.agent, stream.name):
        try:
            return t.Dimension(candidate)
        except ValueError:
            continue
    return _ANALYZER_DIMENSIONS.get(stream.agent, t.Dimension.QUALITY)


def report_markdown(page: ReviewPage) -> str:
    if page.round is None:
        return "# Review: not started\n"
    views = list(page.views.values())
    lines = []
    for stream in page.streams:
        if stream.kind == ReviewerStream.Kind.VERIFIER:
            continue
        spec = t.ReviewerSpec(stream_dimension(stream))
        if stream.state == ReviewerStream.State.FAILED:
            lines.append(ReviewerLine(spec, None, failure=stream.error, agent=stream.agent))
            continue
        own = [v for v in views if v.stream == stream.name]
        level = node_verdict(own).level
        lines.append(ReviewerLine(spec, t.REVIEW_STATE_FOR_VERDICT[level], agent=stream.agent))
    if page.verdict is not None:
        verdict = DomainVerdict(
            t.VerdictLevel(page.verdict.level), page.verdict.rule, page.verdict.confidence
        )
    else:
        verdict = node_verdict(views)
    panel = page.round.stats.panel
    notes = [s.coverage_note for s in page.streams if s.coverage_note]
    reviewer_notes_of = reviewer_notes(space=page.space, streams=page.streams)
    return render_report(
        ReportInput(
            verdict=verdict,
            reviewers=lines,
            nodes=views,
            arbitrations=[(d, arbitrate(d)) for d in page.disagreements],
            positive_notes=notes,
            panel=PanelSummary(**panel.model_dump()) if panel else None,
            comments=[
                ReportComment(reviewer=c.reviewer, body=c.body, location=c.location)
                for c in reviewer_notes_of.comments
            ],
            tickets=[
                ReportTicket(
                    reviewer=tv.reviewer,
                    title=tv.ticket.title,
                    body=tv.ticket.body,
                    status=tv.state.label,
                    round_number=tv.round_number,
                    issue_url=tv.ticket.issue_url,
                )
                for tv in reviewer_notes_of.tickets
            ],
            round=ReportRound(
                number=page.round.number,
                of=len(page.rounds),
                head=page.round.head_sha,
                state=state_label(page.round.state).lower(),
                rerun_of=next(
                    (r.number for r in page.rounds if r.pk == page.round.rerun_of_id), None
                ),
                delta=page.delta_view.summary,
                gone=[f"{g.title} `{g.location}` ({g.priority})" for g in page.delta_view.gone],
            ),
            delta_labels={
                str(n.pk): label
                for n in page.nodes
                if (label := page.delta_view.label(n.fingerprint))
            },
        )
    )
