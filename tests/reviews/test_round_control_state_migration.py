"""Migration reviews 0009 moves the pipeline's control state out of `stats` into columns."""

from __future__ import annotations

import importlib

from django.db import connection
from django.db.migrations.loader import MigrationLoader

from reviews.models import ReviewRound

migration = importlib.import_module("reviews.migrations.0009_round_control_state")

OLD_FACTS = {
    "tier": "adaptive",
    "fast_exit": False,
    "model_configured": True,
    "python_changed": True,
    "panel_mode": "rigorous",
    "followup": True,
    "selected": [["security", "security"]],
    "selection_rationale": ["auth code changed"],
}
OLD_STATS = {
    "facts": OLD_FACTS,
    "done_stages": ["prepare", "consolidate"],
    "walkthrough": "1. app.py — 2 finding(s)",
    "prose_only": [],
}


def test_split_moves_facts_and_done_stages_and_keeps_the_rest():
    stats, facts, done = migration.split_control_state(OLD_STATS, tier="light")
    assert stats == {"walkthrough": "1. app.py — 2 finding(s)", "prose_only": []}
    assert facts == OLD_FACTS
    assert done == ["prepare", "consolidate"]
    assert migration.join_control_state(stats, facts, done) == OLD_STATS


def test_split_fills_facts_an_older_version_did_not_write():
    _stats, facts, done = migration.split_control_state(
        {"facts": {"fast_exit": True}}, tier="balanced"
    )
    assert facts == {
        "tier": "balanced",
        "fast_exit": True,
        "model_configured": False,
        "python_changed": False,
        "panel_mode": "normal",
        "followup": False,
    }
    assert done == []
    assert migration.split_control_state({}, tier="light") == ({}, None, [])


def _historical_apps(name: str):
    return MigrationLoader(connection).project_state(("reviews", name)).apps


def _raw(review_round_id: int) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT stats, facts, done_stages FROM reviews_reviewround WHERE id = %s",
            [review_round_id],
        )
        return cursor.fetchone()


def test_the_migration_moves_an_old_row_and_back(review_factory):
    import json

    review_round = review_factory(tier="adaptive")
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE reviews_reviewround SET stats = %s{cast}, facts = NULL, "  # noqa: S608
            f"done_stages = '[]'{cast} WHERE id = %s",
            [json.dumps(OLD_STATS), review_round.pk],
        )
    migration.forwards(_historical_apps("0009_round_control_state"), None)

    moved = ReviewRound.objects.get(pk=review_round.pk)
    assert moved.done_stages == ["prepare", "consolidate"]
    assert moved.facts is not None and moved.facts.followup and moved.facts.panel_mode == "rigorous"
    assert moved.facts.selected == [("security", "security")]
    assert moved.stats.to_json() == {"walkthrough": "1. app.py — 2 finding(s)", "prose_only": []}

    migration.backwards(_historical_apps("0009_round_control_state"), None)
    stats = _raw(review_round.pk)[0]
    assert (stats if isinstance(stats, dict) else json.loads(stats)) == OLD_STATS
