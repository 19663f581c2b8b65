"""What a model is shown of a tool's schema: the compact form, validation left to the tool."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field

from reviews.domain.model_answers import LensBatchAnswer, RequirementsClosing, ReviewerClosing
from reviews.domain.tool_schemas import compact_schema, strict_compatible


class _Where(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, description="a changed file")
    line: int | None = None


class _Note(BaseModel):
    """A note (the docstring the tool's description already carries)."""

    model_config = ConfigDict(extra="forbid")
    body: str = Field(min_length=1, max_length=500)
    where: _Where | None = None
    tags: list[str] = Field(default_factory=list)


def test_it_inlines_definitions_and_drops_what_only_validation_needs() -> None:
    shown = compact_schema(_Note.model_json_schema())
    assert shown == {
        "type": "object",
        "properties": {
            "body": {"type": "string"},
            "where": {
                "type": "object",
                "properties": {
                    "path": {"description": "a changed file", "type": "string"},
                    "line": {"type": "integer"},
                },
                "required": ["path"],
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["body"],
    }
    # No reference, title, default, bound or closed object is left for the model to read.
    text = json.dumps(shown)
    for word in ("$ref", "$defs", "title", "default", "Length", "additionalProperties", "null"):
        assert word not in text


def test_the_validator_still_refuses_what_the_shown_schema_no_longer_says() -> None:
    """The bounds and the closed objects are the model's business no more, but still enforced."""
    assert not _accepts({"body": ""}) and not _accepts({"body": "x", "colour": "red"})
    assert _accepts({"body": "x", "where": {"path": "a.py", "line": None}})


def _accepts(payload: dict) -> bool:
    try:
        _Note.model_validate(payload)
    except ValueError:
        return False
    return True


def test_a_schema_with_every_field_required_can_still_go_out_strict() -> None:
    assert strict_compatible(compact_schema(LensBatchAnswer.model_json_schema()))
    assert strict_compatible(compact_schema(ReviewerClosing.model_json_schema()))
    # An optional field, at any depth, rules strict mode out.
    assert not strict_compatible(compact_schema(_Note.model_json_schema()))
    assert not strict_compatible(compact_schema(RequirementsClosing.model_json_schema()))


def test_the_answers_the_model_closes_with_are_shown_compact() -> None:
    """The reviewer's closing as sent with every reviewer call: two fields and their rows."""
    shown = compact_schema(ReviewerClosing.model_json_schema())
    assert list(shown["properties"]) == ["summary", "covered"]
    assert shown["properties"]["covered"]["items"]["required"] == ["area", "reviewed_no_issue"]
    assert "description" not in shown  # the docstring is the tool's description already
