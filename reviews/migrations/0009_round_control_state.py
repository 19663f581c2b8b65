"""The pipeline's control state leaves `ReviewRound.stats` for columns of its own: `facts` (what
the stage gates read) and `done_stages` (the inline stages that finished). Reversible: going
back puts both into `stats` again."""

from typing import Any

from django.db import migrations, models

FACT_KEYS = (
    "tier",
    "fast_exit",
    "model_configured",
    "python_changed",
    "panel_mode",
    "followup",
    "selected",
    "selection_rationale",
)


def split_control_state(
    stats: dict[str, Any], *, tier: str
) -> tuple[dict[str, Any], dict[str, Any] | None, list[str]]:
    """(stats without control state, facts or None, done stages) of an old `stats` value.
    Facts written by an older version miss keys the gates now read: they get the value the
    gates would have read then (False, the round's tier, the normal panel)."""
    stats = dict(stats or {})
    old_facts = stats.pop("facts", None)
    done = [str(s) for s in stats.pop("done_stages", None) or []]
    if not isinstance(old_facts, dict):
        return stats, None, done
    facts: dict[str, Any] = {
        "tier": str(old_facts.get("tier") or tier),
        "fast_exit": bool(old_facts.get("fast_exit")),
        "model_configured": bool(old_facts.get("model_configured")),
        "python_changed": bool(old_facts.get("python_changed")),
        "panel_mode": old_facts.get("panel_mode")
        if old_facts.get("panel_mode") in ("normal", "rigorous", "fast")
        else "normal",
        "followup": bool(old_facts.get("followup")),
    }
    for key in ("selected", "selection_rationale"):
        if old_facts.get(key) is not None:
            facts[key] = list(old_facts[key])
    return stats, facts, done


def join_control_state(
    stats: dict[str, Any], facts: dict[str, Any] | None, done: list[str]
) -> dict[str, Any]:
    """The old `stats` value again (the reverse of split_control_state)."""
    joined = dict(stats or {})
    if facts is not None:
        joined["facts"] = dict(facts)
    if done:
        joined["done_stages"] = list(done)
    return joined


def forwards(apps, schema_editor):
    ReviewRound = apps.get_model("reviews", "ReviewRound")
    rounds = ReviewRound.objects.only("pk", "tier", "stats")
    for review_round in rounds.iterator(chunk_size=500):
        stats, facts, done = split_control_state(review_round.stats, tier=review_round.tier)
        ReviewRound.objects.filter(pk=review_round.pk).update(
            stats=stats, facts=facts, done_stages=done
        )


def backwards(apps, schema_editor):
    ReviewRound = apps.get_model("reviews", "ReviewRound")
    rounds = ReviewRound.objects.only("pk", "stats", "facts", "done_stages")
    for review_round in rounds.iterator(chunk_size=500):
        stats = join_control_state(review_round.stats, review_round.facts, review_round.done_stages)
        ReviewRound.objects.filter(pk=review_round.pk).update(stats=stats)


class Migration(migrations.Migration):
    dependencies = [("reviews", "0008_flag_seen_through")]

    operations = [
        migrations.AddField(
            model_name="reviewround",
            name="done_stages",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="reviewround",
            name="facts",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.RunPython(forwards, backwards),
    ]
