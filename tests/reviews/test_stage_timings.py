"""How long each part of a round took: in its stats and its JSON (the sample repository on the
real pipeline, against the fake model server)."""

from __future__ import annotations

import pytest

from reviews.domain.round_stats import stage_timings
from reviews.reports.json_export import review_json
from reviews.selectors import review_page
from tests.reviews import pipeline_scenarios as scenario

pytestmark = pytest.mark.django_db(transaction=True)

PREPARE = ("diff", "classification", "worktree", "index", "cohorts", "planning")


def test_the_json_says_how_long_prepare_and_finalise_took(
    settings, tmp_path, workspace, fake_model, alice
):
    review = scenario.sample_reviews(settings, tmp_path, workspace, fake_model, alice, tier="light")
    scenario.install(fake_model)
    review_round = review()
    timings = review_json(review_page(space=review_round.space))["stats"]["timings"]
    assert set(timings) == {
        "prepare",
        *(f"prepare.{part}" for part in PREPARE),
        "finalise",
        "finalise.axes",
        "finalise.api_contract",
    }
    assert all(isinstance(v, float) and v >= 0 for v in timings.values())
    assert timings["prepare"] == pytest.approx(
        sum(timings[f"prepare.{p}"] for p in PREPARE), abs=0.01
    )
    # The index was built (it cannot take no time); a local repository's checkout is made
    # beside it, so "worktree" is only the wait beyond the index and may be nothing.
    assert timings["prepare.index"] > 0


def test_a_stage_run_again_writes_its_own_figures_over_and_keeps_the_others():
    first = stage_timings(None, "prepare", {"index": 1.23456, "diff": 0.5})
    assert first == {"prepare.index": 1.235, "prepare.diff": 0.5, "prepare": 1.735}
    again = stage_timings({**first, "finalise": 2.0}, "prepare", {"index": 0.1, "diff": 0.2})
    assert again == {"prepare.index": 0.1, "prepare.diff": 0.2, "prepare": 0.3, "finalise": 2.0}
