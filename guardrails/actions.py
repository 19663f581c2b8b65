"""The registry of action classes (DESIGN.md §3.12): what each mutates, its payload, how it runs.

An executor receives the approved payload and the requester and returns a JSON-able result;
it must be idempotent, because a redelivered task may call it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class PrPublishPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    space: int
    round: int
    head_sha: str = Field(min_length=7, max_length=40)
    selection: str = Field(pattern="^(all_open|consensus)$")
    event: str = Field(pattern="^(APPROVE|REQUEST_CHANGES|COMMENT)$")
    approve_on_ship: bool


def _publish(payload: dict[str, Any], requester: Any) -> dict[str, Any]:
    from reviews.models import ReviewSpace
    from reviews.services.publishing import publish_preview, publish_review

    space = ReviewSpace.objects.get(pk=payload["space"])
    # The approval covers exactly this payload: if triage since then changed the GitHub event,
    # what would be posted is no longer what was approved.
    now = publish_preview(
        space=space, selection=payload["selection"], approve_on_ship=payload["approve_on_ship"]
    )
    if now.event != payload["event"]:
        raise RuntimeError(
            f"The review changed since it was approved: it would now post {now.event}, "
            f"not {payload['event']}. Request publishing again."
        )
    record = publish_review(
        space=space,
        selection=payload["selection"],
        approve_on_ship=payload["approve_on_ship"],
        actor=requester,
    )
    if record.state != record.State.POSTED:
        raise RuntimeError(record.error or f"publishing ended {record.state}")
    return {
        "github_review_id": record.github_review_id,
        "url": record.html_url,
        "path": record.path,
    }


def _current_head(payload: dict[str, Any]) -> str:
    from reviews.models import ReviewSpace

    space = ReviewSpace.objects.select_related("pull_request").get(pk=payload["space"])
    latest = space.rounds.order_by("-number").first()
    return latest.head_sha if latest else ""


@dataclass(frozen=True)
class ActionClass:
    name: str
    mutating: bool
    payload: type[BaseModel]
    execute: Callable[[dict[str, Any], Any], dict[str, Any]]
    current_head: Callable[[dict[str, Any]], str]
    description: str


REGISTRY: dict[str, ActionClass] = {
    "prPublish": ActionClass(
        name="prPublish",
        mutating=True,
        payload=PrPublishPayload,
        execute=_publish,
        current_head=_current_head,
        description="Publish a review to GitHub",
    ),
}


def action_class(name: str) -> ActionClass:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"Unknown action class {name!r}.") from None
