"""Audit exports (CSV, JSON Lines) streamed in constant memory.

Rows are read in keyset pages (seq > last seen, LIMIT n) and each page becomes one chunk, so
neither the database cursor nor the response holds more than a page. Under ASGI the chunks come
from an async generator: Django would otherwise drain a sync iterator into a list before
sending the first byte.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import QuerySet

FIELDS = (
    "seq",
    "created_at",
    "actor_label",
    "action",
    "target_type",
    "target_id",
    "target_label",
    "payload",
    "ip",
    "hash",
)
PAGE_SIZE = 1000
FORMATS = ("csv", "jsonl")


def _row(values: dict[str, Any]) -> dict[str, Any]:
    return {**values, "created_at": values["created_at"].isoformat(), "ip": values["ip"] or ""}


def render_header(fmt: str) -> str:
    if fmt != "csv":
        return ""
    out = io.StringIO()
    csv.writer(out).writerow(FIELDS)
    return out.getvalue()


def render_rows(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(_row(r), sort_keys=True) + "\n" for r in rows)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    for r in rows:
        row = _row(r)
        writer.writerow({**row, "payload": json.dumps(row["payload"], sort_keys=True)})
    return out.getvalue()


def _page(events: QuerySet, after: int) -> list[dict[str, Any]]:
    return list(events.filter(seq__gt=after).order_by("seq").values(*FIELDS)[:PAGE_SIZE])


def first_page(events: QuerySet) -> list[dict[str, Any]]:
    """The first page, read by the view before the response starts: a filter the database
    refuses fails the request with a proper answer, never a download cut off after its
    headers."""
    return _page(events, 0)


def chunks(events: QuerySet, fmt: str, first: list[dict[str, Any]]) -> Iterator[str]:
    """For WSGI (and the test client): a plain generator, one query per page."""
    if header := render_header(fmt):
        yield header
    rows = first
    while rows:
        yield render_rows(rows, fmt)
        rows = _page(events, rows[-1]["seq"])


async def achunks(events: QuerySet, fmt: str, first: list[dict[str, Any]]) -> AsyncIterator[str]:
    """For ASGI: the same pages, each fetched in the request's database thread."""
    if header := render_header(fmt):
        yield header
    rows = first
    while rows:
        yield render_rows(rows, fmt)
        rows = await sync_to_async(_page)(events, rows[-1]["seq"])
