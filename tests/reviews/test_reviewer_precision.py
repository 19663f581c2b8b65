"""Precision per reviewer and per rule from people's decisions over several rounds and pull
requests, the same figures in the selector, the settings page, the API and the report; and a
verdict that reads calibrated confidence only once a reviewer has enough decisions."""

from __future__ import annotations

import re

import pytest

from reviews.domain.reviewer_precision import MIN_CALIBRATION_DECISIONS, Outcome, Precision
from reviews.domain.types import AxisName, AxisResult
from reviews.models import ReviewNode
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page, reviewer_precision
from reviews.services.axes import axis_record
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm_by_person, node_dismiss, node_resolve
from reviews.services.rounds import round_start
from reviews.services.verdicts import round_finalise
from reviews.sources.sample_repo import _git
from tests.fixtures import node_payload
from tests.reviews import pipeline_scenarios as scenario

SEARCH = "shop/search.py"
# The SQL fixed in place (same number of lines, so the other findings keep their lines).
FIXED_QUERY = (
    '        query = "SELECT id, name FROM products WHERE name LIKE ?"\n'
    '        return conn.execute(query, (f"%{term}%",)).fetchall()\n'
)


def _node(review_round, stream: str, rule: str | None = None) -> ReviewNode:
    """The round's canonical finding of `stream` (with analyzer `rule`)."""
    found = [
        n
        for n in ReviewNode.objects.filter(
            round=review_round, stream__name=stream, duplicate_of__isnull=True
        )
        if rule is None or (n.tags.analyzer is not None and n.tags.analyzer.rule == rule)
    ]
    assert len(found) == 1, [(n.title, n.tags.analyzer) for n in found]
    return found[0]


def _push_fix(path) -> None:
    """Commit the parameterised query on the feature branch, as a push would."""
    _git(path, "checkout", "-q", "feature/search")
    lines = (path / SEARCH).read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "query = " in line)
    lines[start : start + 2] = [FIXED_QUERY]
    (path / SEARCH).write_text("".join(lines))
    _git(path, "commit", "-qam", "Use a query parameter")
    _git(path, "checkout", "-q", "main")


def _figures(rows) -> dict:
    """reviewer → (kept, dismissed, {rule: (kept, dismissed)})."""
    return {
        r.reviewer: (
            r.precision.kept,
            r.precision.dismissed,
            {x.rule: (x.precision.kept, x.precision.dismissed) for x in r.rules},
        )
        for r in rows
    }


# By hand, from the decisions the scenario scripts:
# - bandit: B404 dismissed with a reason (repository one) and resolved (two); B602 resolved;
#   B110 dismissed with a reason in the second round. 2 kept of 4.
# - implementation (its defect category, security): the SQL finding of round 1 gone after the
#   push that fixed its file (kept), the same finding dismissed with a reason on repository two.
# - secrets: its key finding confirmed by a person.
# Undecided findings (round 1's B110, which round 2 still reports) and the B608 merged into the
# SQL finding count for nothing.
WORKSPACE = {
    "bandit": (2, 2, {"B404": (1, 1), "B602": (1, 0), "B110": (0, 1)}),
    "implementation": (1, 1, {"security": (1, 1)}),
    "secrets": (1, 0, {"secrets:api_key": (1, 0)}),
}
REPOSITORY_ONE = {
    "bandit": (1, 2, {"B602": (1, 0), "B404": (0, 1), "B110": (0, 1)}),
    "implementation": (1, 0, {"security": (1, 0)}),
    "secrets": (1, 0, {"secrets:api_key": (1, 0)}),
}
REPOSITORY_TWO = {
    "bandit": (1, 0, {"B404": (1, 0)}),
    "implementation": (0, 1, {"security": (0, 1)}),
}
# Wilson 95% intervals by hand: 2 of 4 → 0.15–0.85, 1 of 2 → 0.09–0.91, 1 of 1 → 0.21–1.00.
IN_WORDS = {
    "bandit": "0.50 (2 of 4 kept; 95% interval 0.15–0.85)",
    "implementation": "0.50 (1 of 2 kept; 95% interval 0.09–0.91)",
    "secrets": "1.00 (1 of 1 kept; 95% interval 0.21–1.00)",
}


@pytest.mark.django_db(transaction=True)
def test_precision_from_decisions_over_rounds_and_pull_requests(
    settings, tmp_path, workspace, fake_model, alice, member_factory, client_for
):
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    scenario.install(fake_model)
    one = scenario.sample_reviews(
        settings, tmp_path / "one", workspace, fake_model, alice, tier="light"
    )
    first = one()
    node_dismiss(
        node=_node(first, "bandit", "B404"), user=bob, reason="importing subprocess is fine"
    )
    node_resolve(node=_node(first, "bandit", "B602"), user=bob)
    node_confirm_by_person(node=_node(first, "secrets"), user=bob)
    sql = _node(first, "implementation")  # nobody decides it: the push fixes it

    # The push fixes the query; the implementation reviewer no longer reports it.
    _push_fix(tmp_path / "one" / "shop")
    scenario.install(
        fake_model,
        overrides={"implementation": scenario.reviewer([], path=SEARCH, name="impl-clean")},
    )
    second = one()
    assert second.space_id == first.space_id and second.number == 2
    assert not ReviewNode.objects.filter(round=second, title=sql.title).exists()
    node_dismiss(
        node=_node(second, "bandit", "B110"), user=bob, reason="the pass is the fallback here"
    )

    # A second pull request, in a second repository, with the same change.
    scenario.install(fake_model)
    two = scenario.sample_reviews(
        settings, tmp_path / "two", workspace, fake_model, alice, tier="light"
    )
    third = two()
    node_dismiss(
        node=_node(third, "implementation"), user=bob, reason="the view validates the term"
    )
    node_resolve(node=_node(third, "bandit", "B404"), user=bob)
    repo_one, repo_two = first.space.pull_request.repository, third.space.pull_request.repository
    assert repo_one.pk != repo_two.pk

    # The selector.
    figures = reviewer_precision(workspace)
    assert _figures(figures) == WORKSPACE
    assert _figures(reviewer_precision(workspace, repository=repo_one)) == REPOSITORY_ONE
    assert _figures(reviewer_precision(workspace, repository=repo_two)) == REPOSITORY_TWO
    by_name = {r.reviewer: r for r in figures}
    assert by_name["implementation"].outcomes == {Outcome.FIXED: 1, Outcome.DISMISSED: 1}
    assert by_name["bandit"].outcomes == {Outcome.RESOLVED: 2, Outcome.DISMISSED: 2}
    assert {name: r.precision.words() for name, r in by_name.items()} == IN_WORDS
    # The last decision of each: bandit's is the B404 resolved on repository two.
    last = _figures(reviewer_precision(workspace, last=1))
    assert last["bandit"] == (1, 0, {"B404": (1, 0)})
    assert last["implementation"] == (0, 1, {"security": (0, 1)})

    # The settings page, for a viewer too.
    viewer = client_for(member_factory(workspace, "viewer", "vic@example.com"))
    url = f"/w/{workspace.slug}/settings/reviewers/"
    html = viewer.get(url).content.decode()
    assert _page_rows(html) == _page_expected(WORKSPACE)
    assert "2 resolved, 2 dismissed" in html and "1 fixed, 1 dismissed" in html
    html = viewer.get(url, {"repository": repo_two.pk}).content.decode()
    assert _page_rows(html) == _page_expected(REPOSITORY_TWO)
    assert viewer.get(url, {"repository": "nope"}).status_code == 400
    assert viewer.get(url, {"repository": 999999}).status_code == 404

    # The API, the same figures.
    api = f"/api/v1/workspaces/{workspace.slug}/reviewer-precision"
    answer = viewer.get(api).json()
    assert answer["repository"] is None and answer["last"] is None
    assert _api_figures(answer) == WORKSPACE
    bandit = next(r for r in answer["reviewers"] if r["reviewer"] == "bandit")
    assert (bandit["precision"], round(bandit["low"], 2), round(bandit["high"], 2)) == (
        0.5,
        0.15,
        0.85,
    )
    assert bandit["outcomes"] == {"resolved": 2, "dismissed": 2} and not bandit["calibrated"]
    answer = viewer.get(api, {"repository": repo_one.pk}).json()
    assert answer["repository"] == repo_one.pk and _api_figures(answer) == REPOSITORY_ONE
    assert _api_figures(viewer.get(api, {"last": 1}).json())["bandit"] == last["bandit"]
    assert viewer.get(api, {"repository": 999999}).status_code == 404
    assert viewer.get(api, {"last": 0}).status_code == 422

    # The report's reviewers table: each reviewer's precision over its recent decisions.
    report = report_markdown(review_page(space=third.space))
    reviewers = report.split("## Reviewers", 1)[1].split("## Requirements", 1)[0]
    assert "| Reviewer | Verdict | Turns | Precision (last 100 decisions) |" in reviewers
    rows = {
        name: line
        for line in reviewers.splitlines()
        for name in IN_WORDS
        if line.startswith("| ") and f"({name}) |" in line
    }
    assert {name: line.rsplit(" | ", 1)[1] for name, line in rows.items()} == {
        name: f"{words} |" for name, words in IN_WORDS.items()
    }

    # Nobody has enough decisions for calibration: the verdicts read confidence as stated.
    assert all(r.calibration.decisions < MIN_CALIBRATION_DECISIONS for r in figures)
    third.verdict.refresh_from_db()
    assert "calibrated" not in third.verdict.rule and "calibrated" not in report


def _page_rows(html: str) -> list[tuple[str, ...]]:
    """(reviewer, rule or "", precision, kept, wrong, interval) per row of the precision table."""
    section = html.split('id="precision"', 1)[1]
    rows = []
    for attrs, cells in re.findall(
        r'<tr class="(?:reviewer|rule)-precision" ([^>]*)>(.*?)</tr>', section, re.S
    ):
        reviewer = re.search(r'data-reviewer="([^"]*)"', attrs).group(1)
        rule = re.search(r'data-rule="([^"]*)"', attrs)
        values = [
            re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", cells, re.S)
        ]
        kept = values[2].split(" ", 1)[0]
        rows.append(
            (reviewer, rule.group(1) if rule else "", values[1], kept, values[3], values[4])
        )
    return rows


def _page_expected(figures: dict) -> list[tuple[str, ...]]:
    rows = []
    for reviewer in sorted(figures):
        kept, dismissed, rules = figures[reviewer]
        rows.append((reviewer, "", *_cells(kept, dismissed)))
        ordered = sorted(rules.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
        rows += [(reviewer, rule, *_cells(*counts)) for rule, counts in ordered]
    return rows


def _cells(kept: int, dismissed: int) -> tuple[str, ...]:
    p = Precision(kept, dismissed)
    return (f"{p.value:.2f}", str(kept), str(dismissed), f"{p.low:.2f}–{p.high:.2f}")


def _api_figures(answer: dict) -> dict:
    return {
        r["reviewer"]: (
            r["kept"],
            r["dismissed"],
            {x["rule"]: (x["kept"], x["dismissed"]) for x in r["rules"]},
        )
        for r in answer["reviewers"]
    }


# -- calibrated confidence and the verdict -----------------------------------------------------


def test_the_verdict_reads_calibrated_confidence_only_with_enough_decisions(
    review_factory, stream_factory, workspace, member_factory, client_for
):
    """The implementation reviewer says 0.90 about every P0; people kept 3 of its 12 earlier
    findings. Below MIN_CALIBRATION_DECISIONS its P0 blocks as stated; from then on it is read
    as 12/22 × 0.25 + 10/22 × 0.90 = 0.55, below 0.70: the round holds, and the finding keeps
    its stated 0.90."""
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    history = review_factory(workspace)
    earlier = stream_factory(history, "implementation")
    findings = [
        node_record(
            stream=earlier,
            payload=node_payload(
                priority="P0",
                confidence=0.9,
                title=f"Unchecked input {i}",
                anchor={"path": f"app/part{i}.py", "start_line": 3, "end_line": 3},
            ),
        ).node
        for i in range(12)
    ]
    space = history.space
    current = round_start(space=space, head_sha="c" * 40, tier="thorough")
    axis_record(
        review_round=current,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.PASS,
        source="deterministic",
    )
    stream = stream_factory(current, "implementation")
    p0 = node_record(
        stream=stream, payload=node_payload(priority="P0", confidence=0.9, title="Token leak")
    ).node

    # Nine decisions (all dismissed): too few, the verdict is what it was without any.
    for node in findings[:9]:
        node_dismiss(node=node, user=bob, reason="not how this code is used")
    verdict = round_finalise(review_round=current)
    assert (verdict.level, verdict.confidence) == ("block", 0.9)
    assert verdict.rule.startswith("P0 at 0.90: Token leak") and "calibrated" not in verdict.rule

    # Three more, all resolved: 12 decisions, 3 kept.
    for node in findings[9:]:
        node_resolve(node=node, user=bob)
    verdict = round_finalise(review_round=current)
    assert verdict.level == "hold"
    assert verdict.confidence == pytest.approx(12 / 22 * 0.25 + 10 / 22 * 0.9, abs=1e-4)
    assert verdict.rule.startswith("P0 at 0.55, calibrated from a stated 0.90 (below 0.7)")
    p0.refresh_from_db()
    assert p0.confidence == 0.9  # the finding keeps what its reviewer said

    # The finding's card and the report show both.
    page = client_for(bob).get(f"/w/{workspace.slug}/reviews/{space.pk}/").content.decode()
    assert "confidence stated 0.90, calibrated 0.55 from 12 decisions" in page
    report = report_markdown(review_page(space=space))
    assert "confidence stated 0.90, calibrated 0.55 from 12 decisions" in report


def test_a_dismissal_credited_from_an_earlier_decision_is_not_counted_again():
    """Dismissal memory (tags.memory) records a finding dismissed under the decision a person
    made on an earlier one, and names that decision's time as pydantic writes it: that finding
    is not a second example. A person's own later dismissal (another time) is."""
    from datetime import UTC, datetime

    from pydantic import TypeAdapter

    from reviews.selectors.precision import _credited

    decided = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
    stored = TypeAdapter(datetime).dump_python(decided, mode="json")
    assert _credited(decided, stored)
    assert not _credited(datetime(2026, 3, 2, tzinfo=UTC), stored)
    assert not _credited(decided, None) and not _credited(None, stored)
    assert _credited(decided, "not a time")  # unreadable: not counted as its own decision


def test_a_precision_drop_marks_the_reviewers_calibration_stale(
    review_factory, stream_factory, workspace, alice, member_factory, client_for
):
    """People kept the implementation reviewer's first 30 findings and dismissed its latest
    20: its calibration is stale in Settings → Reviewers, on its page and in the API, though
    its model never changed; a reviewer with too few decisions is not."""
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    history = review_factory(workspace)
    stream = stream_factory(history, "implementation")
    nodes = [
        node_record(
            stream=stream,
            payload=node_payload(
                title=f"Finding {i}",
                anchor={"path": f"app/m{i}.py", "start_line": 1, "end_line": 1},
            ),
        ).node
        for i in range(50)
    ]
    client = client_for(alice)
    listed = client.get(f"/api/v1/workspaces/{workspace.slug}/reviewers").json()
    assert not next(r for r in listed if r["key"] == "implementation")["calibration_stale"]
    for node in nodes[:30]:
        node_resolve(node=node, user=bob)
    for node in nodes[30:]:
        node_dismiss(node=node, user=bob, reason="not a defect here")

    page = client.get(f"/w/{workspace.slug}/settings/reviewers/").content.decode()
    assert "⚠ calibration stale: precision dropped" in page
    assert page.count("⚠ calibration stale") == 1  # only that reviewer
    mine = client.get(f"/w/{workspace.slug}/settings/reviewers/implementation/").content.decode()
    assert "people kept 0 of this reviewer's last 20 findings (0.00)" in mine
    assert "against 30 of 30 before (1.00)" in mine
    listed = client.get(f"/api/v1/workspaces/{workspace.slug}/reviewers").json()
    stale = {r["key"] for r in listed if r["calibration_stale"]}
    assert stale == {"implementation"}
    one = client.get(f"/api/v1/workspaces/{workspace.slug}/reviewers/implementation").json()
    assert one["calibration_stale"] is True
