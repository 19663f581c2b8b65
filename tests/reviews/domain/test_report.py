"""The consolidated report's fixed markdown format."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.arbitration import arbitrate
from reviews.domain.disagreements import find_disagreements
from reviews.domain.report import (
    ReportComment,
    ReportInput,
    ReportMessage,
    ReportStep,
    RequirementLine,
    RequirementsCheck,
    ReviewerLine,
    render_report,
)
from reviews.domain.report_figures import PanelSummary
from reviews.domain.types import (
    Category,
    Dimension,
    NodeType,
    NodeView,
    Priority,
    ReviewerSpec,
    ReviewState,
    VerdictLevel,
)
from reviews.domain.verdict import Verdict, node_verdict


def _node(id: str, agent: str, priority: Priority, **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id=id,
        agent=agent,
        type=NodeType.BUG,
        priority=priority,
        confidence=0.9,
        category=Category.SECURITY,
        path="app/auth.py",
        start_line=42,
        end_line=42,
        title=f"Finding {id}",
        body="Why it matters.",
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


NODES = [
    _node(
        "a",
        "impl",
        Priority.P0,
        replacement_lines=("return compare_digest(a, b)",),
        credited_agents=("quality",),
    ),
    _node(
        "b",
        "quality",
        Priority.P2,
        type=NodeType.SUGGESTION,
        category=Category.STYLE,
        fix_prompt="Rename the helper.",
    ),
    _node("c", "arch", Priority.P1, category=Category.PERFORMANCE, path="app/db.py"),
    _node("d", "arch", Priority.P3, duplicate_of="a"),
]


def _report(**kw: object) -> str:
    args: dict[str, object] = dict(
        verdict=node_verdict(NODES),
        reviewers=[
            ReviewerLine(ReviewerSpec(Dimension.IMPLEMENTATION), ReviewState.BLOCKED),
            ReviewerLine(ReviewerSpec(Dimension.SECURITY), None, failure="timeout twice"),
        ],
        nodes=NODES,
        arbitrations=[(d, arbitrate(d)) for d in find_disagreements(NODES)],
        positive_notes=["Good test coverage of the happy path."],
        panel=PanelSummary(verified=3, filtered=1, contested=1, unverified=2, narrowed=True),
    )
    args.update(kw)
    return render_report(ReportInput(**args))  # type: ignore[arg-type]


def test_it_renders_the_sections_in_fixed_order() -> None:
    """Title, reviewers, requirements, issues (critical/major/minor), disagreements, notes,
    summary."""
    report = _report()
    assert re.findall(r"^#{1,3} .*$", report, flags=re.M) == [
        "# Review: BLOCKED",
        "## Reviewers",
        "## Requirements",
        "## Walkthrough",
        "## Issues",
        "### Critical",
        "### Major",
        "### Minor",
        "## Disagreements",
        "## Positive notes",
        "## Notes from reviewers",
        "## Summary",
        "## Cost",
    ]


@pytest.mark.parametrize(
    ("level", "state"),
    [
        (VerdictLevel.BLOCK, "BLOCKED"),
        (VerdictLevel.HOLD, "CHANGES_REQUESTED"),
        (VerdictLevel.SHIP, "APPROVED"),
    ],
)
def test_it_maps_verdicts_to_review_states(level: VerdictLevel, state: str) -> None:
    """Block → BLOCKED, Hold → CHANGES_REQUESTED, Ship → APPROVED."""
    report = _report(verdict=Verdict(level, "rule text", 0.5))
    assert report.startswith(f"# Review: {state}\n")
    assert f"**Verdict:** {state} — rule text (confidence 0.50)" in report


def test_it_attributes_issues_groups_them_and_suggests_fixes() -> None:
    """Each issue names its reviewers and fix; duplicates are not repeated."""
    report = _report()
    critical = report.split("### Critical")[1].split("### Major")[0]
    assert (
        "**Finding a** — `app/auth.py:42` (P0, security, confidence 0.90) — found by impl, quality"
    ) in critical
    assert "```text\n  return compare_digest(a, b)\n  ```" in critical
    assert "Finding c" in report.split("### Major")[1].split("### Minor")[0]
    assert "Suggested fix: Rename the helper." in report.split("### Minor")[1]
    assert "Finding d" not in report.split("## Issues")[1].split("## Disagreements")[0]


def test_it_names_the_angle_a_failed_reviewer_did_not_cover() -> None:
    """A failed reviewer shows as FAILED with a 'not covered' line."""
    report = _report()
    assert "| security | FAILED |" in report
    assert "- Not covered: the security angle (reviewer failed: timeout twice)." in report


def test_it_shows_disagreements_with_their_arbitration() -> None:
    """One entry for the line (its widest gap, P0 vs P3), with the rule that decided it."""
    report = _report()
    section = report.split("## Disagreements")[1].split("## Positive notes")[0]
    assert "impl (P0 bug) vs arch (P3 bug) at app/auth.py:42" in section
    assert section.count("\n- ") == 1
    assert "Arbitration (critical finding wins) → BLOCKED" in section


def test_it_counts_findings_by_dimension_and_severity() -> None:
    """The summary table has one row per category with findings, plus totals."""
    summary = _report().split("## Summary")[1]
    assert "| performance | 0 | 1 | 0 | 1 |" in summary
    assert "| security | 1 | 0 | 0 | 1 |" in summary
    assert "| style | 0 | 0 | 1 | 1 |" in summary
    assert "| **Total** | 1 | 1 | 1 | 3 |" in summary
    assert "narrowed by the cost guard" in summary


def test_it_says_none_for_empty_sections() -> None:
    """An empty review still has every section, each saying None."""
    report = _report(
        verdict=node_verdict([]),
        reviewers=[],
        nodes=[],
        arbitrations=[],
        positive_notes=[],
        panel=None,
    )
    assert report.count("None.") == 8
    assert report.endswith("## Cost\n\nNone.\n")  # no model call recorded
    assert "## Notes from reviewers\n\nNone." in report
    assert "No reviewer ran." in report
    assert "| **Total** | 0 | 0 | 0 | 0 |" in report


def test_reviewer_notes_list_comments_then_tickets_with_their_status() -> None:
    from reviews.domain.report import ReportComment, ReportTicket

    report = _report(
        comments=[
            ReportComment("security", "Is this endpoint public?", "app/views.py:12"),
            ReportComment("quality", "Nice split of the module."),
        ],
        tickets=[
            ReportTicket(
                "architecture",
                "Extract the payment client",
                "It is duplicated in three places.",
                "GitHub issue created",
                1,
                "https://github.com/acme/app/issues/9",
            )
        ],
    )
    section = report.split("## Notes from reviewers")[1].split("## Summary")[0]
    assert section.strip().splitlines() == [
        "- Comment from security on `app/views.py:12`: Is this endpoint public?",
        "- Comment from quality: Nice split of the module.",
        "- Ticket proposed by architecture (round 1, GitHub issue created): "
        "**Extract the payment client**",
        "  It is duplicated in three places.",
        "  GitHub issue: https://github.com/acme/app/issues/9",
    ]


def _section(report: str, title: str) -> str:
    return report.split(f"## {title}\n\n")[1].split("\n\n## ")[0]


def test_a_reviewer_waiting_for_the_request_is_never_approved() -> None:
    report = _report(
        reviewers=[
            ReviewerLine(ReviewerSpec(Dimension.REQUIREMENTS), None, waiting=True),
            ReviewerLine(ReviewerSpec(Dimension.QUALITY), ReviewState.APPROVED),
        ],
        requirements=RequirementsCheck(waiting=True),
    )
    reviewers = _section(report, "Reviewers")
    assert "| requirements | waiting for the original request |" in reviewers
    assert "requirements | APPROVED" not in reviewers and "Not covered" not in reviewers
    assert "waiting for the original request" in _section(report, "Requirements")


def test_the_requirements_table_its_gaps_and_an_off_target_judgement_are_shown() -> None:
    report = _report(
        requirements=RequirementsCheck(
            answered=True,
            rows=[
                RequirementLine("Product search", "yes", "shop/search.py:10"),
                RequirementLine("Export | list", "partial", ""),
            ],
            findings=[("partial implementation", "Export has no handler", "shop/search.py:16")],
            off_target="it builds an import instead",
        )
    )
    section = _section(report, "Requirements")
    assert section.splitlines() == [
        "**Implementation off-target:** it builds an import instead",
        "",
        "| Requirement | Covered? | Evidence |",
        "|---|---|---|",
        "| Product search | yes | shop/search.py:10 |",
        "| Export \\| list | partial | — |",
        "",
        "- partial implementation: Export has no handler `shop/search.py:16`",
    ]
    assert "No requirements reviewer ran" in _section(_report(), "Requirements")
    no_table = _section(_report(requirements=RequirementsCheck()), "Requirements")
    assert no_table == "The requirements reviewer gave no coverage table."
    running = _section(_report(requirements=RequirementsCheck(unfinished=True)), "Requirements")
    assert running == "The requirements check has not finished."


def test_each_reviewer_says_what_it_covered_or_that_it_closed_in_prose() -> None:
    report = _report(
        reviewers=[
            ReviewerLine(
                ReviewerSpec(Dimension.SECURITY),
                ReviewState.BLOCKED,
                covered=[("shop/search.py", False), ("shop/views.py", True)],
            ),
            ReviewerLine(ReviewerSpec(Dimension.QUALITY), ReviewState.APPROVED, prose_only=True),
        ]
    )
    reviewers = _section(report, "Reviewers")
    assert "- security covered: shop/search.py; shop/views.py (reviewed, no issue)" in reviewers
    assert "- quality closed in prose only: no coverage statement" in reviewers


def test_the_walkthrough_is_the_leads_steps_or_the_cohort_tour() -> None:
    """The lead's steps, numbered with their paths; without them the deterministic lines."""
    steps = [
        ReportStep("Search entry point", ["shop/views.py"], "The view passes q to the search."),
        ReportStep("Overview", [], "Why the change exists."),
    ]
    report = _report(walkthrough=steps, walkthrough_text="1. a.py — 2 finding(s)")
    section = report.split("## Walkthrough")[1].split("## Issues")[0]
    assert "1. **Search entry point** — `shop/views.py`\n   The view passes q" in section
    assert "2. **Overview**\n   Why the change exists." in section
    assert "finding(s)" not in section
    plain = _report(walkthrough_text="1. a.py — 2 finding(s)\nPlus 1 finding(s) about the change")
    assert "## Walkthrough\n\n1. a.py — 2 finding(s)\nPlus 1" in plain
    assert "## Walkthrough\n\nNone." in _report()


def test_the_summary_says_why_the_panel_and_critic_did_not_run() -> None:
    """Fast mode names both skipped stages; a panel that simply did not run claims no reason."""
    fast = _report(panel=PanelSummary(skipped=True), fast_mode=True).split("## Summary")[1]
    assert "Verification: panel and critic skipped: fast mode." in fast
    assert "no follow-up reviewer ran" in fast
    idle = _report(panel=PanelSummary(skipped=True)).split("## Summary")[1]
    assert "Verification panel: not run; findings are unverified." in idle
    assert "fast mode" not in idle
    empty = _report(nodes=[], arbitrations=[], panel=PanelSummary(skipped=True))
    assert "Verification panel: not run (no open finding)." in empty


# -- the discussion ------------------------------------------------------------------------------


def _talk(body: str) -> dict[str, list[ReportMessage]]:
    message = ReportMessage(author="bob@example.com", body=body, when="2026-12-02 01:50 UTC")
    return {"node:a": [message], "note:1:0": [message]}


def test_each_thread_is_counted_or_quoted_under_what_it_discusses() -> None:
    threads = {
        "node:a": [
            ReportMessage("bob@example.com", "Why P0?", "2026-12-02 01:50 UTC", marks=["edited"]),
            ReportMessage("octo on GitHub", "Reachable.", "2026-12-02 01:51 UTC", from_github=True),
        ]
    }
    counted = _section(_report(threads=threads), "Issues")
    assert "Discussion: 2 messages (1 from GitHub)." in counted and "Why P0?" not in counted
    quoted = _section(_report(threads=threads, discussion=True), "Issues")
    assert (
        "  Discussion:\n"
        "  - bob@example.com (2026-12-02 01:50 UTC, edited):\n"
        "    > Why P0?\n"
        "  - octo on GitHub (2026-12-02 01:51 UTC, from GitHub):\n"
        "    > Reachable."
    ) in quoted
    # Under its finding, before the next one.
    assert quoted.index("Finding a") < quoted.index("Why P0?") < quoted.index("Finding c")
    assert "Discussion" not in _report()


@given(st.text(max_size=300))
def test_a_message_never_adds_a_section_or_leaves_its_quote(body: str) -> None:
    comments = [ReportComment(reviewer="security", body="Cache it.", subject="note:1:0")]
    plain = _report(comments=comments)
    talked = _report(comments=comments, threads=_talk(body), discussion=True)
    headings = [line for line in talked.splitlines() if line.startswith("#")]
    assert headings == [line for line in plain.splitlines() if line.startswith("#")]
    for line in body.splitlines():
        assert f"    > {line}".rstrip() in talked
