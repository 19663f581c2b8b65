"""The shapes a model must answer in when its answer decides something. Pure.

A verification lens, a reviewer's closing statement, the requirements reviewer's coverage
table, the completeness critic and the lead's walkthrough each end their run with one of these,
as a call to the `final_answer` tool (reviews/agents/runtime.py). A model that writes the JSON
in its prose instead is read too (`json_in_prose`); one that does not validate is told why once,
then counted as an abstention with the reason, never guessed at.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DimensionName = Literal[
    "implementation", "quality", "architecture", "security", "performance", "requirements"
]


class _Answer(BaseModel):
    # Unknown keys are ignored (a model adds commentary fields); missing ones are an error.
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class LensAnswer(_Answer):
    """One verification lens on one finding."""

    verdict: Literal["real", "false_positive"] = Field(
        description="real: the defect exists and matters"
    )
    # The lenses' system prompt says severity is "if real" and the reason one sentence.
    severity: Literal["critical", "high", "medium", "low"]
    reason: str = Field(min_length=1)


class LensBatchEntry(LensAnswer):
    """One verification lens on one finding of a group, named by its ref."""

    ref: str = Field(min_length=1)


def _entry_schema() -> dict[str, Any]:
    """What the model is shown for one entry of a batch: the entry's schema, its ref first and
    without the generated titles."""
    schema = LensBatchEntry.model_json_schema()
    fields = schema["properties"]
    order = ["ref", *(name for name in fields if name != "ref")]
    return {
        "type": "object",
        "properties": {
            name: {k: v for k, v in fields[name].items() if k != "title"} for name in order
        },
        "required": [name for name in order if name in schema["required"]],
    }


class LensBatchAnswer(_Answer):
    """One verification lens on a group of findings: a verdict per ref."""

    # Entries are read one by one (reviews/domain/lens_answers.py `lens_batch`): an invalid
    # entry costs its own finding's verdict, not its neighbours', so the answer as a whole only
    # needs to be a list. The schema the model sees still names every field of an entry.
    verdicts: list[Any] = Field(json_schema_extra={"items": _entry_schema()})


class CoveredArea(_Answer):
    # The reviewers' system prompt says what an area is and when `reviewed_no_issue` holds:
    # the schema, sent with every reviewer call, does not say it again.
    area: str = Field(min_length=1)
    reviewed_no_issue: bool


class ReviewerClosing(_Answer):
    """What a reviewer examined: its statement of coverage (finding nothing is a result)."""

    summary: str = Field(min_length=1, description="one short paragraph")
    covered: list[CoveredArea]


class RequirementRow(_Answer):
    requirement: str = Field(min_length=1, description="One atomic item of the request.")
    covered: Literal["yes", "partial", "no"]
    evidence: str = Field(
        description="file:line where it is implemented, or what is missing.", default=""
    )


class RequirementsClosing(ReviewerClosing):
    """The requirements reviewer's closing: the request mapped item by item to the change."""

    requirements: list[RequirementRow] = Field(
        description="Each discrete requirement of the original request, in its order."
    )
    off_target: bool = Field(
        default=False,
        description="true when the change implements something other than what was asked.",
    )
    off_target_reason: str = Field(default="", description="Why, when off_target is true.")


class CriticAnswer(_Answer):
    """The completeness critic's judgement of which angles this change needs."""

    warranted: list[DimensionName] = Field(description="needed, whether or not they ran")
    gaps: list[str] = Field(default_factory=list, description="one short line each")


class WalkthroughStep(_Answer):
    title: str = Field(min_length=1)
    # The lead's system prompt says what a step's paths and explanation are.
    paths: list[str]
    explanation: str = Field(min_length=1)


class Walkthrough(_Answer):
    """The lead's tour of the change in reading order. It restates no finding."""

    steps: list[WalkthroughStep]


def json_in_prose(text: str) -> Any | None:
    """The first JSON object in `text` (bare, fenced or inside sentences), or None."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None
