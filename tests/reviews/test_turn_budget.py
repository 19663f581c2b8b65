"""A reviewer's turns: counted, bounded, and shown. On the real pipeline against the fake model
server (the sample repository, light tier: one model reviewer)."""

from __future__ import annotations

import html
import re

import pytest

from reviews.agents.review_mode_guard import last_turn_note
from reviews.models import ReviewerStream
from reviews.pipeline.model_runs import REVIEWER_TURNS
from reviews.reports.markdown import report_markdown
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


def test_a_reviewer_that_reads_much_sends_only_its_newest_reads_whole(
    shop, fake_model, monkeypatch
):
    """Each turn re-sends the history: past a weight, the oldest file reads the model has
    already answered go out as a one-line note, the newest two whole."""
    from reviews.agents import review_mode_guard

    monkeypatch.setattr(review_mode_guard, "READS_KEPT_CHARS", 400)  # the sample's files are short
    files = ("shop/db.py", "shop/orders.py", "shop/views.py", "shop/search.py")
    reader = Script(
        "reader",
        (
            *[calls(("read", {"path": path})) for path in files],
            calls(("add_review_node", scenario.sql_finding())),
        ),
    )
    scenario.install(fake_model, overrides={"implementation": reader})
    review_round = shop()
    sent = _reviewer_requests(fake_model, "implementation")
    assert len(sent) == len(files) + 2  # the reads, the finding, the closing nudge
    last = sent[-1].json["messages"]
    results = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    reads = [
        call["id"]
        for m in last
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
        if call["function"]["name"] == "read"
    ]
    read_results = [results[i] for i in reads]
    assert len(read_results) == len(files)
    older, newest_two = read_results[:-2], read_results[-2:]
    assert all(r.startswith("[Cleared to keep the conversation short") for r in older)
    assert "shop/db.py" in older[0]  # it says which read it stands for
    assert all(not r.startswith("[Cleared") and "1|" in r for r in newest_two)
    # The finding recorded after the reads stands, and the round is what it was.
    stream = ReviewerStream.objects.get(round=review_round, name="implementation")
    assert stream.accepted == 1 and review_round.verdict.level == "block"
