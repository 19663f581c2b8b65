"""A reviewer's turns: counted, bounded, and shown. On the real pipeline against the fake model
server (the sample repository, light tier: one model reviewer)."""

from __future__ import annotations

import html
import re

import pytest

from reviews.agents.runtime import last_turn_note
from reviews.models import ReviewerStream
from reviews.pipeline.model_runs import REVIEWER_TURNS
from reviews.reporting import report_markdown
from reviews.selectors import review_page
from tests.fakes.model_server import Script, calls
from tests.reviews import pipeline_scenarios as scenario

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def shop(settings, tmp_path, workspace, fake_model, alice):
    return scenario.sample_reviews(settings, tmp_path, workspace, fake_model, alice, tier="light")


def _reviewer_requests(fake_model, name: str) -> list:
    return [r for r in fake_model.recorded() if f"You are the {name} reviewer." in r.body]


def test_a_reviewer_that_never_closes_stops_at_its_budget_with_its_finding_kept(
    shop, fake_model, client_for, alice, workspace
):
    # It records the SQL injection, then reads the same file again and again.
    wanders = Script(
        "wanders",
        (
            calls(("add_review_node", scenario.sql_finding())),
            *[calls(("read", {"path": "shop/search.py"}))] * (REVIEWER_TURNS + 4),
        ),
    )
    scenario.install(fake_model, overrides={"implementation": wanders})
    review_round = shop()

    sent = _reviewer_requests(fake_model, "implementation")
    assert len(sent) == REVIEWER_TURNS  # one attempt, never a second: the budget is not a fault
    note = last_turn_note(REVIEWER_TURNS)
    assert note in sent[-1].body and not any(note in r.body for r in sent[:-1])
    stream = ReviewerStream.objects.get(round=review_round, name="implementation")
    assert stream.state == "done" and stream.accepted == 1
    assert (stream.turns, stream.turn_budget) == (REVIEWER_TURNS, REVIEWER_TURNS)
    assert "turn budget" in stream.closing.answer_error
    assert review_round.verdict.level == "block"  # the P0 it recorded still decides

    report = report_markdown(review_page(space=review_round.space))
    assert re.search(
        rf"\| implementation [^|]*\| [^|]+ \| {REVIEWER_TURNS} of {REVIEWER_TURNS} \|", report
    )
    page = client_for(alice).get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    row = html.unescape(page.content.decode()).split('id="stream-implementation"')[1]
    row = row.split("</tr>")[0]
    assert f"<td>{REVIEWER_TURNS} of {REVIEWER_TURNS}</td>" in row
    assert f"no closing: its turn budget ({REVIEWER_TURNS} model calls) ran out" in row


def test_a_reviewer_that_closes_in_time_is_told_nothing_about_the_budget(shop, fake_model):
    scenario.install(fake_model, multi_turn=True)
    review_round = shop()
    sent = _reviewer_requests(fake_model, "implementation")
    assert len(sent) == 2  # read, then record and close in one reply
    assert not any("turn budget" in r.body for r in sent)
    stream = ReviewerStream.objects.get(round=review_round, name="implementation")
    assert (stream.turns, stream.turn_budget) == (2, REVIEWER_TURNS)
