"""Every JSON column has a schema, checked on every write; bad shapes are refused, not stored."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.test.utils import isolate_apps

from config.typed_json import SchemaJSONField
from reviews.domain.node_tags import NodeTags
from reviews.domain.round_stats import RoundStats
from reviews.models import ReviewNode, ReviewRound
from tests.fixtures import node_payload

PROJECT_APPS = ("reviews", "guardrails", "workspaces")


def untyped_json_fields(model_classes) -> list[str]:
    """JSON columns without a schema: anything may be stored in them."""
    return [
        f"{model.__name__}.{field.name}"
        for model in model_classes
        for field in model._meta.get_fields()
        if isinstance(field, models.JSONField)
        and (not isinstance(field, SchemaJSONField) or field.schema is None)
    ]


def _project_models():
    return [m for m in apps.get_models() if m._meta.app_label in PROJECT_APPS]


def test_every_json_column_of_the_project_has_a_schema():
    assert untyped_json_fields(_project_models()) == []


@isolate_apps("reviews")
def test_the_guard_catches_a_plain_json_field():
    class Planted(models.Model):
        loose = models.JSONField(default=dict)
        typed = SchemaJSONField(schema=dict[str, int], default=dict)

        class Meta:
            app_label = "reviews"

        def __str__(self) -> str:
            return "planted"

    assert untyped_json_fields([Planted]) == ["Planted.loose"]


# One value of the wrong shape per column: each is refused before it reaches the database.
BAD_VALUES = [
    ("reviews.ReviewRound", "stats", {"walkthrough": ["not", "text"]}),
    ("reviews.ReviewRound", "stats", {"facts": {"tier": "light"}}),  # control state: own column
    ("reviews.ReviewRound", "facts", {"tier": "light", "fast_exit": "maybe"}),
    ("reviews.ReviewRound", "done_stages", ["prepare", "publish"]),
    ("reviews.PipelineStep", "result", {"state": "exploded"}),
    ("reviews.PipelineStep", "nodes", ["12", "a node"]),
    ("reviews.PipelineStep", "rule_reachable", {"12": True}),
    ("reviews.ReviewerStream", "rejection_reasons", [{"reason": "x"}]),
    ("reviews.ReviewerStream", "notes", [{"kind": "memo", "body": "x"}]),
    ("reviews.ReviewerStream", "closing", {"covered": [{"area": "x", "reviewed_no_issue": "?"}]}),
    ("reviews.ReviewNode", "replacement_lines", "one line"),
    ("reviews.ReviewNode", "triage_flags", {"hot_path": "yes"}),
    ("reviews.ReviewNode", "credited_agents", "security"),
    ("reviews.ReviewNode", "tags", {"panel": "approved"}),
    ("reviews.ReviewNode", "tags", {"analyzer": {"tool": "ruff"}}),
    ("reviews.AxisResult", "details", ["not", "an", "object"]),
    ("reviews.Verdict", "contributing", {"1": True}),
    ("reviews.PublishRecord", "plan", {"inline": [1], "posted": True}),
    ("reviews.CodeIndexRecord", "data", {"format": 1, "indexed": True}),
    ("reviews.SarifUpload", "document", ["runs"]),
    ("reviews.SarifUpload", "runs", [["ruff"]]),
    ("guardrails.AuditEvent", "payload", ["a list"]),
    ("guardrails.ApprovalRequest", "payload", "text"),
    ("guardrails.ApprovalRequest", "result", {"bad\x00key": 1}),
    ("workspaces.Workspace", "gated_axes", ["security"]),
    ("workspaces.ReviewerConfig", "anti_patterns", [3]),
    ("workspaces.ReviewerConfig", "criteria", [{"name": "x", "weight": 0}]),
    ("workspaces.ReviewerConfig", "few_shots", [{"excerpt": "x"}]),
    ("workspaces.ReviewerConfig", "tiers", ["nightly"]),
    ("workspaces.Tombstone", "counts", {"rounds": "three"}),
]


@pytest.mark.parametrize(("model", "field", "value"), BAD_VALUES)
def test_a_value_of_the_wrong_shape_is_refused(model, field, value):
    column = apps.get_model(model)._meta.get_field(field)
    with pytest.raises(ValidationError, match="does not match its schema"):
        column.get_db_prep_save(value, connection)
    with pytest.raises(ValidationError):
        column.validate(value, None)


def test_every_column_is_in_the_table_of_bad_values():
    typed = {
        f"{m._meta.app_label}.{m.__name__}.{f.name}"
        for m in _project_models()
        for f in m._meta.get_fields()
        if isinstance(f, SchemaJSONField)
    }
    assert typed == {f"{model}.{field}" for model, field, _ in BAD_VALUES}


def test_the_stored_value_is_the_validated_one_with_only_the_keys_written(review_factory):
    review_round = review_factory()
    review_round.stats = {"walkthrough": "1. a.py", "tokens": {"in": 3, "out": 4}}
    review_round.save(update_fields=["stats"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT stats FROM reviews_reviewround WHERE id = %s", [review_round.pk])
        raw = cursor.fetchone()[0]
    stored = raw if isinstance(raw, dict) else __import__("json").loads(raw)
    assert stored == {"walkthrough": "1. a.py", "tokens": {"in": 3, "out": 4}}


def test_model_reads_give_the_schema_object_from_the_database_and_from_assignment(
    review_factory,
):
    review_round = review_factory()
    assert isinstance(review_round.stats, RoundStats)
    review_round.stats = {"prose_only": ["quality"]}
    assert review_round.stats.prose_only == ["quality"]
    review_round.save(update_fields=["stats"])
    again = ReviewRound.objects.get(pk=review_round.pk)
    assert isinstance(again.stats, RoundStats) and again.stats.prose_only == ["quality"]


def test_a_wrong_assignment_fails_at_once_and_a_wrong_attribute_fails_on_save(review_factory):
    review_round = review_factory()
    with pytest.raises(ValidationError):
        review_round.stats = {"prose_only": "quality"}
    review_round.stats.walkthrough = 42  # pydantic does not check attribute assignment…
    with pytest.raises(ValidationError, match="walkthrough"), transaction.atomic():
        review_round.save(update_fields=["stats"])  # …the write does
    assert ReviewRound.objects.get(pk=review_round.pk).stats.walkthrough is None


def test_update_and_bulk_update_are_checked_too(review_factory):
    review_round = review_factory()
    rounds = ReviewRound.objects.filter(pk=review_round.pk)
    with pytest.raises(ValidationError), transaction.atomic():
        rounds.update(done_stages=["prepare", "lunch"])
    rounds.update(done_stages=["prepare"])
    assert rounds.get().done_stages == ["prepare"]
    review_round.done_stages = ["nap"]
    with pytest.raises(ValidationError), transaction.atomic():
        ReviewRound.objects.bulk_update([review_round], ["done_stages"])


def test_a_key_a_later_version_retired_does_not_make_a_row_unreadable(review_factory):
    review_round = review_factory()
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE reviews_reviewround SET stats = %s{cast} WHERE id = %s",  # noqa: S608
            ['{"walkthrough": "w", "retired_key": 1}', review_round.pk],
        )
    again = ReviewRound.objects.get(pk=review_round.pk)
    assert again.stats.walkthrough == "w"
    assert again.stats.to_json() == {"walkthrough": "w"}


def test_queries_into_a_typed_column_still_work(review_factory, stream_factory):
    from reviews.services.node_recording import node_record

    review_round = review_factory()
    stream = stream_factory(review_round, "security")
    node = node_record(stream=stream, payload=node_payload()).node
    node.tags = node.tags.with_(panel="confirmed")
    node.save(update_fields=["tags"])
    assert ReviewNode.objects.filter(tags__panel="confirmed").get() == node
    assert list(ReviewNode.objects.values_list("tags__panel", flat=True)) == ["confirmed"]
    assert isinstance(ReviewNode.objects.values_list("tags", flat=True).get(), NodeTags)


def test_migrations_see_a_plain_json_field():
    field = ReviewRound._meta.get_field("stats")
    _name, path, _args, kwargs = field.deconstruct()
    assert path == "django.db.models.JSONField" and "schema" not in kwargs


def test_a_model_of_another_schema_is_refused(review_factory):
    review_round = review_factory()
    with pytest.raises(ValidationError, match="holds RoundStats, not NodeTags"):
        review_round.stats = NodeTags(unverified=True)
