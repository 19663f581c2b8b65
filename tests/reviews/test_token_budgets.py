"""Token budgets in real rounds on the sample repository against the fake model server: a round
whose budget is below its need finishes with what fits and says what it skipped, and a pull
request budget spent by earlier rounds leaves the next round only what fits. What the fake
received is the evidence of the spend (docs/domain-rules.md#token-budgets)."""

from __future__ import annotations

import pytest

from reviews.models import ReviewerStream
from reviews.reports.json_export import review_json
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page
from tests.fakes.model_server import Script, calls
from tests.reviews import pipeline_scenarios as scenario

pytestmark = pytest.mark.django_db(transaction=True)


def received_tokens(fake, since: int = 0) -> int:
    """The prompt tokens the fake model server counted in what it received (its own rule: four
    characters a token, as it reports in `usage`), from request number `since` on."""
    return sum(max(1, len(r.body) // 4) for r in fake.recorded()[since:])


def asked(fake, marker: str, since: int = 0) -> bool:
    return any(marker in r.body for r in fake.recorded()[since:])


@pytest.fixture
def shop(settings, tmp_path, workspace, fake_model, alice):
    scenario.install(fake_model)
    return scenario.sample_reviews(
        settings, tmp_path, workspace, fake_model, alice, tier="thorough"
    )


def _summary(review_round) -> str:
    page = review_page(space=review_round.space, round_number=review_round.number)
    return report_markdown(page).split("## Summary")[1]


def test_a_thorough_round_below_its_need_finishes_within_the_budget_and_says_what_it_skipped(
    shop, workspace, fake_model, alice, client_for
):
    # A thorough round of the sample change sends about 89,000 tokens (the fake's count).
    workspace.round_token_budget = 30_000
    workspace.save(update_fields=["round_token_budget"])

    review_round = shop()

    assert review_round.state == "finished"
    page = review_page(space=review_round.space, round_number=review_round.number)
    assert page.verdict is not None
    # What the model server received stays under the budget.
    assert received_tokens(fake_model) <= 30_000
    budget = review_round.stats.budget
    assert budget is not None and budget.spent is not None and budget.spent <= 30_000
    # The change has high-risk patterns (SQL, shell): the security reviewer is the one kept.
    model_streams = set(
        review_round.streams.filter(kind=ReviewerStream.Kind.MODEL).values_list("name", flat=True)
    )
    assert "security" in model_streams
    skipped = {s.key: s for s in budget.skipped}
    dropped = {"architecture", "performance", "implementation", "requirements"} - model_streams
    assert dropped and dropped <= set(skipped)
    for key in dropped:
        assert not asked(fake_model, f"You are the {key} reviewer.")
    # Panel checks that did not fit leave their findings unverified; the round says which.
    panel_skips = [s for s in budget.skipped if s.kind == "panel"]
    assert panel_skips
    summary = _summary(review_round)
    assert "Budget: 30,000 tokens per round; spent " in summary
    assert "; skipped:\n" in summary
    for skip in budget.skipped:
        assert f"- {skip.reason}" in summary
    assert "- architecture reviewer skipped: round budget would be exceeded (est. " in summary
    # The panel drops its least important checks first: every check skipped is of a priority
    # no higher than every check kept.
    assert any(s.reason.startswith("panel check of P") for s in panel_skips)
    assert all("skipped: round budget" in s.reason for s in panel_skips)
    # The JSON carries the same record, and the page says it in the process card.
    exported = review_json(page)["stats"]["budget"]
    assert [s["reason"] for s in exported["skipped"]] == [s.reason for s in budget.skipped]
    html = (
        client_for(alice)
        .get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
        .content.decode()
    )
    assert 'id="process-budget"' in html
    assert "architecture reviewer skipped: round budget would be exceeded" in html


def test_a_pull_request_budget_spent_by_earlier_rounds_leaves_the_next_round_what_fits(
    shop, workspace, fake_model
):
    first = shop()
    assert first.stats.budget is not None and first.stats.budget.spent
    assert first.stats.budget.skipped == []
    spent_before = first.stats.budget.spent
    # 20,000 tokens left for the pull request: about one reviewer and the lead's and critic's
    # calls, nowhere near a thorough round.
    workspace.pr_token_budget = spent_before + 20_000
    workspace.save(update_fields=["pr_token_budget"])
    since = len(fake_model.recorded())

    second = shop()

    assert second.state == "finished"
    assert received_tokens(fake_model, since) <= 20_000
    model_streams = set(
        second.streams.filter(kind=ReviewerStream.Kind.MODEL).values_list("name", flat=True)
    )
    assert model_streams == {"security"}
    budget = second.stats.budget
    assert budget is not None and budget.pr_spent_before == spent_before
    reasons = [s.reason for s in budget.skipped]
    assert reasons and all("skipped: pull request budget" in r for r in reasons)
    summary = _summary(second)
    assert (
        f"Budget: 400,000 tokens per round, {spent_before + 20_000:,} per pull request "
        f"({spent_before:,} spent by its earlier rounds); spent "
    ) in summary
    assert "- implementation reviewer skipped: pull request budget would be exceeded" in summary


def test_the_follow_up_the_budget_cannot_pay_for_is_skipped_and_named(shop, workspace, fake_model):
    # A light round's one reviewer, the lead, the critic and part of the panel fit; the
    # performance follow-up the critic asks for does not. What the panel spent is
    # read from the ledger, not its estimate, so the margin is narrow: about 7,000 tokens are
    # spent before the follow-up is planned, and it is estimated at about 13,000.
    workspace.round_token_budget = 18_000
    workspace.save(update_fields=["round_token_budget"])

    scenario.critic_asks_for(fake_model, "performance")
    review_round = shop(tier="light")

    assert review_round.state == "finished"
    assert asked(fake_model, scenario.CRITIC)
    assert not asked(fake_model, "You are the followup-")
    assert not review_round.streams.filter(name__startswith="followup-").exists()
    assert review_round.stats.critic is not None
    assert review_round.stats.critic.follow_up is None
    assert review_round.stats.critic.missing_dimensions == ["performance"]
    assert received_tokens(fake_model) <= 18_000
    summary = _summary(review_round)
    assert (
        "- follow-up performance reviewer skipped: round budget would be exceeded (est. " in summary
    )


def test_a_reviewer_that_reaches_its_cap_ends_with_what_it_recorded_and_is_not_run_again(
    settings, tmp_path, workspace, fake_model, alice
):
    # A reviewer on a bad day: it reads the same files turn after turn, and its prompt grows.
    greedy = Script(
        "greedy",
        tuple(
            calls(("read", {"path": "shop/search.py"}), ("read", {"path": "shop/views.py"}))
            for _ in range(30)
        ),
    )
    scenario.install(fake_model, overrides={"security": greedy})
    review = scenario.sample_reviews(
        settings, tmp_path, workspace, fake_model, alice, tier="thorough"
    )
    workspace.round_token_budget = 24_000
    workspace.save(update_fields=["round_token_budget"])

    review_round = review()

    assert review_round.state == "finished"
    security = review_round.streams.get(name="security")
    assert security.state == "failed"
    assert "budget exhausted" in security.error
    runs = {r.run for r in fake_model.recorded() if "You are the security reviewer." in r.body}
    assert len(runs) == 1  # no second, narrowed attempt paid for with what was not there
    cap = review_round.stats.budget.reviewer_cap
    assert cap is not None and cap < 24_000
    security_tokens = sum(
        max(1, len(r.body) // 4)
        for r in fake_model.recorded()
        if "You are the security reviewer." in r.body
    )
    # The cap stops it after the call that crossed it: at most one call's worth beyond.
    assert security_tokens < 2 * cap


def test_a_pull_request_budget_used_up_leaves_the_next_round_to_the_analyzers_and_says_so(
    shop, workspace, fake_model
):
    first = shop()
    workspace.pr_token_budget = first.stats.budget.spent  # every token of it spent
    workspace.save(update_fields=["pr_token_budget"])
    since = len(fake_model.recorded())

    second = shop()

    assert second.state == "finished"
    assert review_page(space=second.space, round_number=second.number).verdict is not None
    assert fake_model.recorded()[since:] == []  # not one model call
    assert not second.streams.filter(kind=ReviewerStream.Kind.MODEL).exists()
    assert second.streams.filter(kind=ReviewerStream.Kind.ANALYZER).exists()
    summary = _summary(second)
    for label in ("security reviewer", "implementation reviewer", "lead's walkthrough call"):
        assert f"- {label} skipped: pull request budget exhausted (est. " in summary
    assert "- critic's call skipped: pull request budget exhausted" in summary
