"""The consolidated review report, in its fixed markdown format.

Sections, always present and always in this order: title with the review state, Reviewers
(each with its verdict and its precision over its last RECENT_DECISIONS decisions by people,
reviews/domain/reviewer_precision.py;
failed ones say which angle was not covered; what each said it covered,
with "reviewed, no issue" flags; a reviewer held for the original request says "waiting for the
original request", never APPROVED), Requirements (the requirements reviewer's table Requirement /
Covered? / Evidence, its findings by category, an off-target judgement), Walkthrough (the lead's
steps, or the cohorts in reading order), Issues grouped Critical
(P0) / Major (P1) / Minor (P2-P3) with attribution and a suggested fix, Disagreements with the
arbitration, Positive notes, Notes from reviewers (comments, proposed tickets and their status),
each finding, disagreement and note followed by its discussion (a line counting its messages,
or, when the reader asks for the discussion, every message quoted with its author, its time and
whether it came from GitHub, was posted there or was edited),
Summary (dimension x severity table, plus the verification panel's line, which in fast mode says
the panel and critic were skipped, and the budget's: the token budgets, the round's spend and
every model call skipped to stay within them), Cost (the round's model calls: tokens in, cached,
out, and money when the workspace set a price, by role; the pull request's total over its
rounds; which models have no price; how many calls the provider reported no usage for). Empty
sections say
"None." so a reader — or a parser — never guesses.
Block → BLOCKED, Hold → CHANGES_REQUESTED, Ship → APPROVED.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reviews.domain.report_figures import (
    BudgetSummary,
    PanelSummary,
    budget_lines,
    cost_lines,
    panel_line,
)

from .arbitration import ArbitrationDecision
from .briefs import fence, one_line
from .disagreements import Disagreement
from .panel import FAST_MODE_SKIP
from .reviewer_precision import RECENT_DECISIONS, Calibrated, Precision
from .spend import Spend, Totals
from .types import REVIEW_STATE_FOR_VERDICT, Category, NodeView, ReviewerSpec, ReviewState
from .verdict import Verdict, counted_nodes

GROUPS = (("Critical", (0,)), ("Major", (1,)), ("Minor", (2, 3)))


WAITING_FOR_REQUEST = "waiting for the original request"


@dataclass(frozen=True, slots=True)
class ReviewerLine:
    reviewer: ReviewerSpec
    state: ReviewState | None  # None when the reviewer failed
    failure: str = ""
    agent: str = ""
    waiting: bool = False  # a process block: held until a person supplies the request
    covered: Sequence[tuple[str, bool]] = ()  # (area, reviewed with no issue) from its closing
    prose_only: bool = False  # closed in prose only: it covered nothing it can be held to
    # Its precision over its last RECENT_DECISIONS decisions by people (None: none yet).
    precision: Precision | None = None
    turns: tuple[int, int] | None = None  # (model calls made, its turn budget); None: no model


@dataclass(frozen=True, slots=True)
class RequirementLine:
    requirement: str
    covered: str  # yes | partial | no
    evidence: str = ""


@dataclass(frozen=True, slots=True)
class RequirementsCheck:
    """The requirements reviewer's part of the round."""

    waiting: bool = False  # no original request yet: nothing was checked
    answered: bool = False  # it closed with a table (which may be empty)
    rows: Sequence[RequirementLine] = ()
    findings: Sequence[tuple[str, str, str]] = ()  # (category in words, title, location)
    off_target: str = ""  # why the change is off target, when it is
    failure: str = ""  # why it did not finish, when it failed
    unfinished: bool = False  # still running (or skipped for another reason than the request)


@dataclass(frozen=True, slots=True)
class ReportStep:
    """A step of the lead's walkthrough."""

    title: str
    paths: Sequence[str]
    explanation: str


@dataclass(frozen=True, slots=True)
class ReportMessage:
    """A message of a thread, as the report quotes it."""

    author: str
    body: str
    when: str  # "2026-12-02 01:50 UTC"
    from_github: bool = False  # a reply written on GitHub
    marks: Sequence[str] = ()  # "posted on GitHub", "edited", a proposal and its state


@dataclass(frozen=True, slots=True)
class ReportComment:
    reviewer: str
    body: str
    location: str = ""
    subject: str = ""  # its thread's key (note:<stream>:<index>)


@dataclass(frozen=True, slots=True)
class ReportTicket:
    reviewer: str
    title: str
    body: str
    status: str  # in words
    round_number: int
    issue_url: str = ""
    subject: str = ""  # its thread's key (note:<stream>:<index>)


@dataclass(frozen=True, slots=True)
class ReportDecision:
    """A person's resolve or dismiss of a finding, as the card shows it."""

    status: str  # in words: "Dismissed", "Resolved"
    priority: str
    title: str
    location: str
    by: str
    reason: str = ""
    remembered: str = ""  # recorded under an earlier dismissal: where it comes from


@dataclass(frozen=True, slots=True)
class ReportRound:
    """Which round the report is of, and its delta (the page's words)."""

    number: int
    of: int
    head: str
    state: str  # in words
    rerun_of: int | None = None
    delta: str = ""  # "same head as round 1; since round 2: 1 new, 3 still open, 2 gone"
    gone: Sequence[str] = ()  # "title `path:line`" of the findings gone since the baseline


@dataclass(frozen=True, slots=True)
class ReportInput:
    verdict: Verdict
    reviewers: Sequence[ReviewerLine]
    nodes: Sequence[NodeView]
    arbitrations: Sequence[tuple[Disagreement, ArbitrationDecision]] = ()
    positive_notes: Sequence[str] = ()
    panel: PanelSummary | None = None
    comments: Sequence[ReportComment] = ()
    tickets: Sequence[ReportTicket] = ()
    round: ReportRound | None = None
    delta_labels: Mapping[str, str] = field(default_factory=dict)  # node id → new | still open
    requirements: RequirementsCheck | None = None  # None: no requirements reviewer in the round
    walkthrough: Sequence[ReportStep] = ()  # the lead's steps; else `walkthrough_text`
    walkthrough_text: str = ""  # the deterministic tour, one line per cohort
    disabled: Sequence[str] = ()  # reviewers the round called for that the workspace switched off
    unread: Sequence[str] = ()  # files whose content the repository did not have
    decisions: Sequence[ReportDecision] = ()  # people's resolves and dismissals, with reasons
    fast_mode: bool = False  # the workspace's panel mode skipped the panel and the critic
    cost: Spend | None = None  # the round's model calls (None: the caller gave no ledger)
    pr_cost: Totals | None = None  # every round of the pull request
    budget: BudgetSummary | None = None  # None: a round planned before budgets were
    threads: Mapping[str, Sequence[ReportMessage]] = field(default_factory=dict)  # by subject
    discussion: bool = False  # every message quoted, rather than a count per thread
    # node id → its confidence calibrated by its reviewer's decisions (only those calibrated)
    calibrated: Mapping[str, Calibrated] = field(default_factory=dict)


def review_state(verdict: Verdict) -> ReviewState:
    return REVIEW_STATE_FOR_VERDICT[verdict.level]


def render_report(report: ReportInput) -> str:
    issues = sorted(
        counted_nodes(report.nodes),
        key=lambda n: (n.priority.rank, -n.confidence, n.path or "", n.start_line or 0, n.id),
    )
    talk = _Talk(report.threads, report.discussion)
    parts = [
        verdict_section(report.verdict),
        *([_round(report.round)] if report.round else []),
        _reviewers(report.reviewers, report.disabled, report.unread),
        _requirements(report.requirements),
        _walkthrough(report.walkthrough, report.walkthrough_text),
        _issues(issues, report.delta_labels, talk, report.calibrated),
        *([_decisions(report.decisions)] if report.decisions else []),
        _disagreements(report.arbitrations, talk),
        _section("Positive notes", [f"- {one_line(note, 300)}" for note in report.positive_notes]),
        _reviewer_notes(report.comments, report.tickets, talk),
        _summary(issues, report.panel, fast_mode=report.fast_mode, budget=report.budget),
        _section("Cost", cost_lines(report.cost, report.pr_cost)),
    ]
    return "\n\n".join(parts) + "\n"


def _decisions(decisions: Sequence[ReportDecision]) -> str:
    """People's decisions on findings, each with who and why: a dismissed P0 is never silent."""
    lines = [
        f"- {d.status}: {d.priority} {one_line(d.title, 120)} `{d.location}` by {d.by}"
        + (f": “{one_line(d.reason, 300)}”" if d.reason else "")
        + (f" ({d.remembered})" if d.remembered else "")
        for d in decisions
    ]
    return _section("Decisions", lines)


def verdict_section(verdict: Verdict) -> str:
    """The report's first section: its state and the verdict's rule. Also the summary of the
    round's GitHub check run (reviews/domain/check_runs.py)."""
    state = review_state(verdict)
    return f"# Review: {state}\n\n**Verdict:** {state} — {verdict.rule} ({_confidence(verdict)})"


def _confidence(verdict: Verdict) -> str:
    if verdict.confidence is None:
        return "no confidence stated: decided by missing data"
    return f"confidence {verdict.confidence:.2f}"


def _section(title: str, lines: list[str]) -> str:
    return f"## {title}\n\n" + ("\n".join(lines) if lines else "None.")


def _reviewers(
    lines: Sequence[ReviewerLine], disabled: Sequence[str] = (), unread: Sequence[str] = ()
) -> str:
    rows = [
        f"| Reviewer | Verdict | Turns | Precision (last {RECENT_DECISIONS} decisions) |",
        "|---|---|---|---|",
    ]
    failures = [
        f"- Not run: the {name} reviewer (disabled by the workspace's settings)."
        for name in disabled
    ]
    if unread:
        shown = ", ".join(f"`{path}`" for path in unread[:20])
        more = f" and {len(unread) - 20} more" if len(unread) > 20 else ""
        failures.append(
            f"- Not read: {shown}{more} (the repository does not have their content, "
            "e.g. a partial clone's missing files)."
        )
    for line in lines:
        name = line.reviewer.label + (f" ({line.agent})" if line.agent else "")
        precision = (line.precision or Precision()).words()
        turns = f"{line.turns[0]} of {line.turns[1]}" if line.turns else "—"
        rows.append(f"| {name} | {_reviewer_state(line)} | {turns} | {precision} |")
        if line.waiting:
            continue
        if line.state is None:
            why = one_line(line.failure) or "no usable output"
            failures.append(
                f"- Not covered: the {line.reviewer.label} angle (reviewer failed: {why})."
            )
        elif line.covered:
            areas = "; ".join(
                one_line(area, 200) + (" (reviewed, no issue)" if clean else "")
                for area, clean in line.covered
            )
            failures.append(f"- {line.reviewer.label} covered: {areas}")
        elif line.prose_only:
            failures.append(
                f"- {line.reviewer.label} closed in prose only: no coverage statement, "
                "so its angle cannot pass on silence."
            )
    if not lines:
        return _section("Reviewers", ["No reviewer ran.", *failures])
    return _section("Reviewers", [*rows, *([""] if failures else []), *failures])


def _reviewer_state(line: ReviewerLine) -> str:
    if line.waiting:  # a process block is not a verdict on the code, and never an approval
        return WAITING_FOR_REQUEST
    return str(line.state) if line.state is not None else "FAILED"


def _requirements(check: RequirementsCheck | None) -> str:
    if check is None:
        return _section("Requirements", ["No requirements reviewer ran in this round."])
    if check.waiting:
        return _section(
            "Requirements",
            [f"The requirements check is {WAITING_FOR_REQUEST}: supply it to run the check."],
        )
    if check.failure:
        return _section(
            "Requirements",
            [f"Not covered: the requirements check failed ({one_line(check.failure)})."],
        )
    if check.unfinished:
        return _section("Requirements", ["The requirements check has not finished."])
    lines = []
    if check.off_target:
        lines += [f"**Implementation off-target:** {one_line(check.off_target, 400)}", ""]
    if check.rows:
        lines += ["| Requirement | Covered? | Evidence |", "|---|---|---|"]
        lines += [
            f"| {_cell(row.requirement)} | {row.covered} | {_cell(row.evidence) or '—'} |"
            for row in check.rows
        ]
    elif check.answered:
        lines.append("The requirements reviewer listed no requirement.")
    else:
        lines.append("The requirements reviewer gave no coverage table.")
    if check.findings:
        lines.append("")
        lines += [
            f"- {category}: {one_line(title, 200)} `{where}`"
            for category, title, where in check.findings
        ]
    return _section("Requirements", lines)


def _cell(text: str) -> str:
    """Text for a markdown table cell: one line, no column separator."""
    return one_line(text, 200).replace("|", "\\|")


def _walkthrough(steps: Sequence[ReportStep], text: str) -> str:
    if not steps:
        return _section("Walkthrough", [one_line(line, 300) for line in text.splitlines() if line])
    lines = []
    for i, step in enumerate(steps, start=1):
        where = ", ".join(f"`{p}`" for p in step.paths)
        lines.append(f"{i}. **{one_line(step.title, 200)}**" + (f" — {where}" if where else ""))
        lines.append(f"   {one_line(step.explanation, 600)}")
    return _section("Walkthrough", lines)


def _round(r: ReportRound) -> str:
    line = f"**Round:** {r.number} of {r.of} ({r.state}"
    line += f", re-run of round {r.rerun_of})" if r.rerun_of else ")"
    line += f", head `{r.head[:10]}`"
    if r.delta:
        line += f" — {r.delta}"
    gone = [f"- Gone: {one_line(g, 300)}" for g in r.gone]
    return "\n".join([line, *gone]) if gone else line


@dataclass(frozen=True, slots=True)
class _Talk:
    """The threads, and whether the reader asked for every message or a count."""

    threads: Mapping[str, Sequence[ReportMessage]] = field(default_factory=dict)
    full: bool = False

    def lines(self, subject: str) -> list[str]:
        """What follows a finding, disagreement or note: nothing without messages."""
        messages = self.threads.get(subject, ())
        if not messages:
            return []
        if not self.full:
            count = len(messages)
            github = sum(1 for m in messages if m.from_github)
            return [
                f"  Discussion: {count} message{'s' if count != 1 else ''}"
                + (f" ({github} from GitHub)" if github else "")
                + "."
            ]
        lines = ["  Discussion:"]
        for m in messages:
            marks = ", ".join([m.when, *(["from GitHub"] if m.from_github else []), *m.marks])
            lines.append(f"  - {_escaped(one_line(m.author, 200))} ({marks}):")
            # Quoted line by line: a message's own headings and fences stay inside the quote
            # and never pass for a section of the report.
            lines += [f"    > {line}".rstrip() for line in m.body.splitlines() or [""]]
        return lines


def _escaped(text: str) -> str:
    return "".join(f"\\{c}" if c in "\\`*_[]<>#|" else c for c in text)


def _issues(
    issues: list[NodeView],
    labels: Mapping[str, str] | None = None,
    talk: _Talk | None = None,
    calibrated: Mapping[str, Calibrated] | None = None,
) -> str:
    labels = labels or {}
    calibrated = calibrated or {}
    talk = talk or _Talk()
    blocks = []
    for title, ranks in GROUPS:
        group = [n for n in issues if n.priority.rank in ranks]
        body = (
            "\n".join(
                "\n".join(
                    [
                        _issue(n, labels.get(n.id, ""), calibrated.get(n.id)),
                        *talk.lines(f"node:{n.id}"),
                    ]
                )
                for n in group
            )
            if group
            else "None."
        )
        blocks.append(f"### {title}\n\n{body}")
    return "## Issues\n\n" + "\n\n".join(blocks)


def _issue(node: NodeView, delta_label: str = "", calibrated: Calibrated | None = None) -> str:
    confidence = (
        f"confidence {calibrated.words()}" if calibrated else f"confidence {node.confidence:.2f}"
    )
    head = (
        f"- **{one_line(node.title, 200)}** — `{node.location}` "
        f"({node.priority}, {node.category}, {confidence}"
        + (f", {delta_label}" if delta_label else "")
        + f") — found by {', '.join(node.reviewers)}"
    )
    lines = [head]
    if node.body.strip():
        lines.append(f"  {one_line(node.body, 400)}")
    lines.append("  Suggested fix: " + _fix(node))
    return "\n".join(lines)


def _fix(node: NodeView) -> str:
    if node.replacement_lines is not None:
        return "replace the anchored lines with:\n" + _indent(
            fence("\n".join(node.replacement_lines))
        )
    if node.diff:
        return "apply:\n" + _indent(fence(node.diff))
    if node.fix_prompt:
        return one_line(node.fix_prompt, 400)
    return "none given."


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


def _disagreements(
    items: Sequence[tuple[Disagreement, ArbitrationDecision]], talk: _Talk | None = None
) -> str:
    talk = talk or _Talk()
    lines = [
        "\n".join(
            [
                f"- {one_line(d.summary, 400)}\n  Arbitration ({a.rule}) → {a.state}: "
                f"{one_line(a.rationale, 600)}",
                *talk.lines(f"disagreement:{d.key}"),
            ]
        )
        for d, a in items
    ]
    return _section("Disagreements", lines)


def _reviewer_notes(
    comments: Sequence[ReportComment], tickets: Sequence[ReportTicket], talk: _Talk | None = None
) -> str:
    """Comments reviewers left and tickets they proposed, with what people decided."""
    talk = talk or _Talk()
    lines = [
        "\n".join(
            [
                f"- Comment from {c.reviewer}"
                + (f" on `{c.location}`" if c.location else "")
                + f": {one_line(c.body, 600)}",
                *talk.lines(c.subject),
            ]
        )
        for c in comments
    ]
    for ticket in tickets:
        line = (
            f"- Ticket proposed by {ticket.reviewer} (round {ticket.round_number}, "
            f"{ticket.status}): **{one_line(ticket.title, 200)}**"
        )
        if ticket.body.strip():
            line += f"\n  {one_line(ticket.body, 600)}"
        if ticket.issue_url:
            line += f"\n  GitHub issue: {ticket.issue_url}"
        lines.append("\n".join([line, *talk.lines(ticket.subject)]))
    return _section("Notes from reviewers", lines)


def _summary(
    issues: list[NodeView],
    panel: PanelSummary | None,
    *,
    fast_mode: bool,
    budget: BudgetSummary | None = None,
) -> str:
    header = ["| Dimension | Critical | Major | Minor | Total |", "|---|---|---|---|---|"]
    rows, totals = [], [0, 0, 0]
    for category in Category:
        counts = [
            sum(1 for n in issues if n.category is category and n.priority.rank in ranks)
            for _, ranks in GROUPS
        ]
        if sum(counts):
            rows.append(f"| {category} | {' | '.join(map(str, counts))} | {sum(counts)} |")
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
    rows.append(f"| **Total** | {' | '.join(map(str, totals))} | {sum(totals)} |")
    lines = header + rows
    if fast_mode:
        lines += [
            "",
            f"Verification: {FAST_MODE_SKIP}. No lens checked a finding (each is unverified) "
            "and no critic looked for coverage gaps, so no follow-up reviewer ran.",
        ]
    elif panel is not None:
        lines += ["", panel_line(panel, bool(issues))]
    if budget is not None:
        lines += ["", *budget_lines(budget)]
    return _section("Summary", lines)
