"""Progress events for the live guided review, sent to the space's channel group after commit.

Each event names the sections of the page it can change (EVENT_SECTIONS); the space's live
version is bumped and those sections stamped before the event goes out, so a page that
connects later knows what it missed (reviews/live/version.py)."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from reviews.live import version as live_version
from reviews.live import window as live_window

log = logging.getLogger(__name__)

# Each is templates/reviews/sections/<name>.html: one card with a stable id, swapped on its own.
SECTIONS = (
    "header",
    "axes",
    "disagreements",
    "process",
    "files",
    "cohorts",
    "findings",
    "notes",
    "walkthrough",
    "streams",
)
# What a finding's arrival or move can change: the counts and delta in the header, the
# disagreements computed from findings, the files' finding counts, the findings inline in the
# cohorts' diffs, the list.
_FINDINGS = ("header", "disagreements", "files", "cohorts", "findings")

# Event type → the sections it can change. A stage boundary, a round's start and a round's end
# rewrite much at once (cohorts after prepare, walkthrough and merged duplicates after
# consolidate, the process block when a stream stops for the original request, the "yet"
# wording when a round ends): those re-render everything.
EVENT_SECTIONS: dict[str, tuple[str, ...]] = {
    "review.round_started": SECTIONS,
    "review.round_state": SECTIONS,
    "review.stage": SECTIONS,
    "review.stream": ("header", "process", "streams"),
    "review.node_added": (*_FINDINGS, "streams"),
    # A status moves no finding between lists and no diff row: the card alone is re-sent.
    "review.node_status": ("header", "disagreements", "findings"),
    "review.disagreement_decided": _FINDINGS,
    # A finding's priority or suggested change moved (a reviewer's proposal, accepted).
    "review.node_changed": _FINDINGS,
    "review.axis_changed": ("axes",),
    # The verdict shows in the header only; axes and findings send their own events.
    "review.verdict": ("header",),
    "review.space_status": ("header",),
    "review.published": ("header",),
    "review.note_added": ("notes", "streams"),
    "review.ticket": ("notes",),
    # A thread's message: shown under its finding (list and diff), disagreement or note; its
    # subject narrows this down (event_sections).
    "review.thread": ("disagreements", "findings", "cohorts", "notes"),
}
# Events whose `node_id` card stands for the whole findings section when sent live (the
# section is still stamped, so a page connecting later gets the section).
CARD_EVENTS = frozenset({"review.node_status"})
# What a finding's card stands for: its copy in the list and its copy inline in the diff.
CARD_SECTIONS = ("findings", "cohorts")
# A thread's message changes only the one place its subject is shown.
_THREAD_SECTIONS = {
    "node": CARD_SECTIONS,
    "disagreement": ("disagreements",),
    "note": ("notes",),
}


def event_sections(event: dict[str, Any]) -> tuple[str, ...]:
    """The sections one event can change."""
    if event["type"] == "review.thread":
        kind = str(event.get("subject", "")).partition(":")[0]
        if kind in _THREAD_SECTIONS:
            return _THREAD_SECTIONS[kind]
    return EVENT_SECTIONS.get(event["type"], ())


def card_of(event: dict[str, Any]) -> int | None:
    """The finding whose card alone can show this event live, if one can."""
    node_id = event.get("node_id")
    if not node_id:
        return None
    if event["type"] in CARD_EVENTS:
        return int(node_id)
    if event["type"] == "review.thread" and str(event.get("subject", "")).startswith("node:"):
        return int(node_id)
    return None


def space_group(space_id: int) -> str:
    return f"review-space-{space_id}"


def list_group(workspace_id: int) -> str:
    return f"review-list-{workspace_id}"


def emit_list_row(workspace_id: int, space_id: int) -> None:
    """The reviews list of the workspace re-renders this space's row (its verdict moved)."""
    message = {"type": "reviews.row", "event_id": uuid.uuid4().hex, "space_id": space_id}
    transaction.on_commit(lambda: _group_send(list_group(workspace_id), message))


BATCH = "review.batch"
# The events one transaction emitted, per space, waiting for its commit (per thread: each
# thread has its own database connection and so its own transactions).
_pending = threading.local()


def emit(space_id: int, event_type: str, **data: Any) -> None:
    """Queue `event_type` for the space's group once the current transaction commits. One
    transaction's events go out as one message (a dismissal moves the card, the axes and the
    verdict at once): every open page then renders and receives once per change, not once per
    event."""
    if event_type not in EVENT_SECTIONS:
        raise ValueError(f"{event_type} is not a live event of the review page")
    queued: dict[int, list[dict[str, Any]]] = _pending.__dict__.setdefault("events", {})
    queued.setdefault(space_id, []).append({"type": event_type, **data})
    # Every emit registers a flush; the first to run sends them all, the others find nothing.
    # Events of a rolled-back transaction go out with the next commit: a re-render of the
    # present state, never a change that did not happen.
    transaction.on_commit(lambda: _flush(space_id))


def _flush(space_id: int) -> None:
    events = _pending.__dict__.get("events", {}).pop(space_id, [])
    if events:
        live_window.add(space_id, events, send_events)


def batch_sections(events: list[dict[str, Any]]) -> tuple[str, ...]:
    changed = {name for event in events for name in event_sections(event)}
    return tuple(name for name in SECTIONS if name in changed)


def space_send(space_id: int, event_type: str, **data: Any) -> None:
    """Send once the caller has committed: with the space's other events of the moment in the
    full stack (reviews/live/window.py), at once otherwise."""
    events = data["events"] if event_type == BATCH else [{"type": event_type, **data}]
    live_window.add(space_id, events, send_events)


def send_events(space_id: int, events: list[dict[str, Any]]) -> None:
    """Bump the live version (stamping the sections the events change), then tell the group:
    one message, a batch when there are several events."""
    # One id per message lets every socket of a process share the render of the same update.
    event_id = uuid.uuid4().hex
    message: dict[str, Any] = (
        {**events[0], "event_id": event_id}
        if len(events) == 1
        else {"type": BATCH, "event_id": event_id, "events": events}
    )
    try:
        message["version"] = live_version.bump(space_id, batch_sections(events))
    except Exception:  # the page still updates; a socket connecting later syncs in full
        log.exception("could not bump the live version of space %s", space_id)
    _group_send(space_group(space_id), message)


def _group_send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # a dropped live update must never undo or fail a committed change
        log.exception("could not send %s to %s", message["type"], group)
