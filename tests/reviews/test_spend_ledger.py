"""Every model call of a round is in its ledger: what the round reports having sent is what the
(fake) provider received, role by role, even when the provider reports no usage or a run
fails; the spend shows on the review page, in the workspace's spend view and in the API."""

from __future__ import annotations

from collections import Counter
from decimal import ROUND_HALF_UP, Decimal

import pytest

from reviews.models import ModelCall, ModelPrice
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page, round_spent_tokens, space_spent_tokens
from tests.fakes.model_server import Fail, FakeModelServer, Script, calls, sample_finding
from tests.reviews import pipeline_scenarios as scenario

pytestmark = pytest.mark.django_db(transaction=True)


def _close(fraction_of: int, value: int, *, within: float = 0.05) -> bool:
    return abs(value - fraction_of) <= within * fraction_of


@pytest.fixture
def shop(settings, tmp_path, workspace, fake_model, alice):
    scenario.install(fake_model)
    return scenario.sample_reviews(
        settings, tmp_path, workspace, fake_model, alice, tier="thorough"
    )


def test_a_thorough_round_reports_what_the_provider_received(shop, fake_model):
    review_round = shop()
    calls_ = list(ModelCall.objects.filter(round=review_round))
    roles = Counter(c.role for c in calls_)
    # Every kind of call the round made is in the ledger, one row per agent run.
    assert {"reviewer", "lens", "critic", "lead"} <= set(roles)
    assert roles["lens"] % 3 == 0 and roles["critic"] == 1 and roles["lead"] == 1
    answered = sum(1 for r in fake_model.recorded() if r.status == 200)
    assert sum(c.requests for c in calls_) == answered
    # What the round says it sent is what the provider received (within 5 %; here exactly,
    # since the provider reported every call).
    reported = review_round.stats.tokens.tokens_in
    assert fake_model.tokens_received > 0
    assert _close(fake_model.tokens_received, reported)
    assert reported == sum(c.input_tokens for c in calls_)
    assert review_round.stats.tokens.tokens_out == fake_model.tokens_answered
    # A reviewer's later turns resend its earlier ones: the provider's prefix cache shows.
    cached = sum(c.cached_input_tokens for c in calls_)
    assert cached == fake_model.tokens_cached > 0
    assert not any(c.counted_locally for c in calls_)
    # A stream's tokens are its ledger rows'.
    for stream in review_round.streams.filter(kind="model"):
        rows = [c for c in calls_ if c.name == stream.name]
        assert stream.tokens_in == sum(c.input_tokens for c in rows) > 0
        assert stream.tokens_out == sum(c.output_tokens for c in rows)
    assert round_spent_tokens(review_round) == reported + review_round.stats.tokens.tokens_out
    # The report says so, in its Cost section.
    report = report_markdown(review_page(space=review_round.space))
    assert "## Cost" in report
    assert f"{reported:,} input tokens" in report
    assert "no price set for fake-reviewer" in report


def test_a_follow_up_reviewer_is_in_the_ledger_and_the_space_total_adds_rounds(shop, fake_model):
    first = shop()
    scenario.critic_asks_for(fake_model, "performance")  # which a balanced round lacks
    second = shop(tier="balanced")
    assert second.streams.filter(name="followup-performance").exists()
    assert ModelCall.objects.filter(round=second, role="followup").exists()
    assert space_spent_tokens(second.space) == round_spent_tokens(first) + round_spent_tokens(
        second
    )


def test_a_run_that_fails_still_records_what_it_spent(shop, fake_model):
    """The security reviewer records a finding, then the provider fails every later call: the
    stream fails, and both attempts' tokens are in the ledger and on the stream."""
    finding = sample_finding(path="shop/search.py", line=3)
    fake_model.add_script(
        Script("flaky", (calls(("add_review_node", {"payload": finding})), Fail(400))),
        marker="You are the security reviewer.",
    )
    review_round = shop()
    stream = review_round.streams.get(name="security")
    assert stream.state == "failed"
    rows = list(ModelCall.objects.filter(round=review_round, name="security"))
    assert len(rows) == 2 and all(r.failed for r in rows)
    assert all(r.input_tokens > 0 and r.requests == 1 for r in rows)
    assert stream.tokens_in == sum(r.input_tokens for r in rows)
    assert review_round.stats.tokens.tokens_in == fake_model.tokens_received


@pytest.fixture
def silent_model():
    fake = FakeModelServer(omit_usage=True).start()
    try:
        yield fake
    finally:
        fake.stop()


def test_with_no_usage_from_the_provider_the_local_count_stands_in(
    settings, tmp_path, workspace, silent_model, alice
):
    scenario.install(silent_model)
    review = scenario.sample_reviews(
        settings, tmp_path, workspace, silent_model, alice, tier="thorough"
    )
    review_round = review()
    calls_ = list(ModelCall.objects.filter(round=review_round))
    assert calls_ and all(c.counted_locally for c in calls_)
    assert all(c.input_tokens > 0 and c.output_tokens > 0 for c in calls_)
    assert _close(silent_model.tokens_received, review_round.stats.tokens.tokens_in)
    # The reply is counted from what the client parsed (tool arguments re-serialised
    # compactly), so it is a rougher estimate than the prompt's.
    assert _close(silent_model.tokens_answered, review_round.stats.tokens.tokens_out, within=0.25)


def test_prices_turn_tokens_into_money(shop, fake_model, workspace):
    ModelPrice.objects.create(
        workspace=workspace,
        model="fake-reviewer",
        input_per_million="2.50",
        cached_input_per_million="1.25",
        output_per_million="10",
    )
    review_round = shop()
    report = report_markdown(review_page(space=review_round.space))
    assert "no price set" not in report
    tokens = review_round.stats.tokens
    cached = sum(c.cached_input_tokens for c in ModelCall.objects.filter(round=review_round))
    expected = (
        (tokens.tokens_in - cached) * Decimal("2.5")
        + cached * Decimal("1.25")
        + tokens.tokens_out * 10
    ) / 1_000_000
    assert f"${expected.quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP)}" in report


def test_spend_is_on_the_page_in_the_workspace_view_and_in_the_api(
    shop, fake_model, workspace, alice, member_factory, user_factory, client_for
):
    review_round = shop()
    spent = review_round.stats.tokens
    cached = sum(c.cached_input_tokens for c in ModelCall.objects.filter(round=review_round))
    # An admin sets a price through the settings form (CSRF-checked, audited).
    client = client_for(alice)
    response = client.post(
        f"/w/{workspace.slug}/settings/prices/",
        {
            "model": "fake-reviewer",
            "input_price": "3",
            "cached_input_price": "",
            "output_price": "15",
        },
    )
    assert response.status_code == 302
    # Money is rounded half up, as Decimal does it (a float's format would round 0.11145 down).
    expected = Decimal((spent.tokens_in - cached) * 3 + cached * 3 + spent.tokens_out * 15)
    expected /= 1_000_000

    page = client.get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert f"this round: {spent.tokens_in:,} input tokens" in html
    shown = expected.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    assert f"${shown}" in html
    assert "Pull request, all rounds:" in html and "No price set for" not in html

    view = client.get(f"/w/{workspace.slug}/spend/").content.decode()
    assert f"${shown}" in view
    for reviewer in ("implementation", "security", "lens-severity", "critic", "lead-walkthrough"):
        assert f'<th scope="row">{reviewer}</th>' in view
    assert f'<th scope="row">{review_round.created_at:%Y-%m}</th>' in view

    data = client.get(f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}")
    body = data.json()["spend"]
    assert body["round"]["total"]["input_tokens"] == spent.tokens_in
    assert body["round"]["total"]["cost"] == str(
        expected.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
    )
    assert body["pull_request"]["output_tokens"] == spent.tokens_out
    assert {r["key"] for r in body["round"]["by_role"]} >= {"reviewer", "lens", "critic", "lead"}
    listing = client.get(f"/api/v1/workspaces/{workspace.slug}/spend").json()
    assert listing["total"]["input_tokens"] == spent.tokens_in
    assert [r["key"] for r in listing["by_month"]] == [f"{review_round.created_at:%Y-%m}"]

    # A viewer reads the spend but cannot set a price; a non-member sees nothing.
    viewer = member_factory(workspace, "viewer")
    client = client_for(viewer)
    assert client.get(f"/w/{workspace.slug}/spend/").status_code == 200
    refused = client.post(
        f"/w/{workspace.slug}/settings/prices/",
        {"model": "fake-reviewer", "input_price": "0", "output_price": "0"},
    )
    assert refused.status_code == 403
    assert ModelPrice.objects.get(model="fake-reviewer").input_per_million == 3
    client = client_for(user_factory())
    assert client.get(f"/w/{workspace.slug}/spend/").status_code == 404
    assert client.get(f"/api/v1/workspaces/{workspace.slug}/spend").status_code == 404
    assert (
        client.get(
            f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}"
        ).status_code
        == 404
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"model": "fake-reviewer", "input_price": "-1", "output_price": "2"},
        {"model": "fake-reviewer", "input_price": "1e3", "output_price": "2"},
        {"model": "fake-reviewer", "input_price": "1,5", "output_price": "2"},
        {"model": "fake reviewer", "input_price": "1", "output_price": "2"},
        {"model": "fake-reviewer", "input_price": "", "output_price": "2"},
    ],
)
def test_a_price_must_be_a_plain_non_negative_decimal(workspace, alice, client_for, fields):
    response = client_for(alice).post(f"/w/{workspace.slug}/settings/prices/", fields)
    assert response.status_code == 400
    assert not ModelPrice.objects.exists()


def test_the_price_form_needs_its_csrf_token(workspace, alice):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    fields = {"model": "m", "input_price": "1", "output_price": "2"}
    assert client.post(f"/w/{workspace.slug}/settings/prices/", fields).status_code == 403
    assert not ModelPrice.objects.exists()
