"""Reviewers' closing statements and the requirements check, on real rounds of the sample
repository (reviews/sources/sample_repo.py) played by the fake model server."""

from __future__ import annotations

import html
import re

import pytest

from reviews.models import ReviewerStream, ReviewNode
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page
from tests.fakes.model_server import Script, calls, text
from tests.reviews import pipeline_scenarios as scenario

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def shop(settings, tmp_path, workspace, fake_model, alice):
    return scenario.sample_reviews(
        settings, tmp_path, workspace, fake_model, alice, tier="balanced"
    )


def _page_text(client_for, alice, workspace, review_round) -> str:
    response = client_for(alice).get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    assert response.status_code == 200
    return html.unescape(re.sub(r"\s+", " ", response.content.decode()))


def _section(report: str, title: str) -> str:
    return report.split(f"## {title}\n\n")[1].split("\n\n## ")[0]


def test_the_requirements_table_maps_each_requested_feature_on_the_page_and_in_the_report(
    shop, fake_model, client_for, alice, workspace
):
    scenario.install(fake_model)
    review_round = shop(tier="balanced")
    sent = [r.json for r in fake_model.recorded() if "You are the requirements reviewer." in r.body]
    # The reviewer was given the request, the table's columns and the categories to use.
    assert sent and "delete orders" in str(sent[0])
    assert "partial_implementation" in str(sent[0]) and "scope_creep" in str(sent[0])
    assert "final_answer" in str(sent[0]["tools"])

    report = report_markdown(review_page(space=review_round.space))
    table = _section(report, "Requirements")
    assert table.splitlines()[:5] == [
        "| Requirement | Covered? | Evidence |",
        "|---|---|---|",
        "| Product search | yes | shop/search.py:10 search_products, served by shop/views.py:21 |",
        "| An export of the product list | partial | shop/search.py:16 export_products; no "
        "handler exposes it |",
        "| A way to delete orders | yes | shop/views.py:13 delete_order_view |",
    ]
    # Its finding carries its category, in the table's section and on the node.
    assert "- partial implementation: The product export has no way in `shop/search.py:16`" in table
    gap = ReviewNode.objects.get(round=review_round, stream__name="requirements")
    assert gap.tags.requirement_gap == "partial_implementation"
    reviewers = _section(report, "Reviewers")
    assert "- requirements covered: shop/search.py; shop/views.py" in reviewers

    page = _page_text(client_for, alice, workspace, review_round)
    block = page.split('id="requirements-check"')[1].split("</section>")[0]
    for requirement, covered, evidence in (
        ("Product search", "yes", "shop/search.py:10"),
        ("An export of the product list", "partial", "shop/search.py:16"),
        ("A way to delete orders", "yes", "shop/views.py:13"),
    ):
        row = re.search(
            rf"<th scope=\"row\">{requirement}</th><td>(\w+)</td><td>([^<]*)</td>", block
        )
        assert row and row.group(1) == covered and row.group(2).startswith(evidence), requirement
    assert "partial implementation" in block


def test_a_long_request_is_read_whole_by_the_requirements_check_only(
    shop, fake_model, client_for, alice, workspace
):
    """A pasted specification is not sent with every turn of every reviewer: the shared brief
    quotes its opening, the requirements reviewer reads it further, and the page says so."""
    scenario.install(fake_model)
    spec = "\n".join(
        f"{i}. The export endpoint must list product {i} with its price and stock."
        for i in range(1, 400)
    )
    review_round = shop(tier="balanced", original_request=scenario.ORIGINAL_REQUEST + "\n" + spec)
    assert review_round.state == "finished"
    by_role = {}
    for request in fake_model.recorded():
        for name in ("requirements", "implementation", "quality"):
            if f"You are the {name} reviewer." in request.body:
                by_role.setdefault(name, []).append(request.body)
    assert set(by_role) == {"requirements", "implementation", "quality"}
    late = "product 80 with its price"  # past what the brief quotes, within the check's cap
    beyond = "product 399 with its price"  # past the check's cap
    assert all(late in body and beyond not in body for body in by_role["requirements"])
    assert not any(late in body for body in by_role["implementation"] + by_role["quality"])
    assert "delete orders" in by_role["quality"][0]  # the request's opening is shared

    page = _page_text(client_for, alice, workspace, review_round)
    note = page.split('id="process-request">')[1].split("</p>")[0]
    assert note.startswith("The original request is ") and "the rest was not sent" in note


def test_without_the_request_the_check_waits_and_is_never_approved(
    shop, fake_model, client_for, alice, workspace
):
    scenario.install(fake_model)
    review_round = shop(tier="balanced", original_request="")
    stream = review_round.streams.get(name="requirements")
    assert stream.state == ReviewerStream.State.SKIPPED
    assert not any("You are the requirements reviewer." in r.body for r in fake_model.recorded())
    report = report_markdown(review_page(space=review_round.space))
    reviewers = _section(report, "Reviewers")
    assert "| requirements (requirements) | waiting for the original request |" in reviewers
    assert "requirements (requirements) | APPROVED" not in reviewers
    assert "waiting for the original request" in _section(report, "Requirements")
    assert "off-target" not in review_round.verdict.rule
    page = _page_text(client_for, alice, workspace, review_round)
    row = page.split('id="stream-requirements"')[1].split("</tr>")[0]
    assert "Waiting for the original request" in row
    assert "waiting for the original request" in page.split('id="requirements-check"')[1]


def test_an_off_target_change_is_blocked_with_the_reason(shop, fake_model):
    reason = "It adds a product import; the request asks for an export."
    scenario.install(
        fake_model, overrides={"requirements": scenario.requirements_reviewer(off_target=reason)}
    )
    review_round = shop(tier="balanced")
    assert review_round.verdict.level == "block"
    assert review_round.verdict.rule == f"implementation off-target: {reason}"
    report = report_markdown(review_page(space=review_round.space))
    assert f"**Implementation off-target:** {reason}" in _section(report, "Requirements")
    assert f"implementation off-target: {reason}" in report.splitlines()[2]


def test_without_an_off_target_judgement_the_findings_decide(shop, fake_model):
    scenario.install(fake_model)
    review_round = shop(tier="balanced")
    assert "off-target" not in review_round.verdict.rule


def _prose_reviewer(*findings) -> Script:
    """Records its findings, then closes in prose only (no final_answer call, no JSON)."""
    turns = [calls(("read", {"path": "shop/search.py"}))]
    if findings:
        turns.append(calls(*(("add_review_node", f) for f in findings)))
    turns.append(text("I examined and reviewed shop/search.py carefully; all checked."))
    return Script("prose-closing", tuple(turns))


def _model_word_on(review_round, axis: str) -> str:
    """What the token axis is on the model reviewers' word alone: the finaliser's own function,
    given the round's model streams (the analyzers' coverage left out)."""
    from reviews.services.axes import token_axes_record

    model = list(review_round.streams.filter(kind=ReviewerStream.Kind.MODEL))
    token_axes_record(review_round, streams=model)
    return review_round.axes.get(axis=axis).result


def test_a_prose_only_reviewer_keeps_its_findings_and_its_axis_does_not_pass(shop, fake_model):
    finding = scenario.naming_finding()  # maintainability: counts on no token axis
    scenario.install(fake_model, overrides={"implementation": _prose_reviewer(finding)})
    review_round = shop(tier="light")
    stream = review_round.streams.get(name="implementation")
    assert stream.state == ReviewerStream.State.DONE and stream.error == ""  # not a failure
    assert ReviewNode.objects.filter(stream=stream).count() == 1  # its finding stands
    assert (
        stream.closing.summary.startswith("I examined and reviewed")
        and stream.closing.covered == []
    )
    assert review_round.stats.prose_only == ["implementation"]
    correctness = review_round.axes.get(axis="correctness")
    assert correctness.details["silent"] == ["implementation"]
    report = report_markdown(review_page(space=review_round.space))
    # It carried the round's security check as well (the sample's risky patterns).
    assert (
        "- implementation (+ security check) closed in prose only: no coverage statement" in report
    )
    assert "I examined" not in _section(report, "Positive notes")  # prose is no statement
    # "examined", "reviewed", "checked": the words the old regex took as coverage count for
    # nothing; on its own word the reviewer leaves its axis partial, never pass.
    assert _model_word_on(review_round, "correctness") == "partial"


def test_a_structured_closing_is_the_coverage_that_lets_the_axis_pass(
    shop, fake_model, client_for, alice, workspace
):
    scenario.install(fake_model)  # implementation: one security finding, closes with answer()
    review_round = shop(tier="light")
    stream = review_round.streams.get(name="implementation")
    assert [(c.area, c.reviewed_no_issue) for c in stream.closing.covered] == [
        ("shop/search.py", False)
    ]
    assert review_round.stats.prose_only == []
    assert review_round.axes.get(axis="correctness").details["silent"] == []
    assert _model_word_on(review_round, "correctness") == "pass"
    page = _page_text(client_for, alice, workspace, review_round)
    row = page.split('id="stream-implementation"')[1].split("</tr>")[0]
    assert "shop/search.py" in row and 'class="covered-areas"' in row
