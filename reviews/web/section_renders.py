"""The guided review's sections rendered once per version and shared: by every socket of a
process that shows the same thing, and by the page itself across processes (the cache).

What a section shows depends on the space's state, which its live version names
(reviews/live/version.py: every change that reaches a page bumps it), and on the viewer only
through `Viewer`: the round the page is pinned to, the role (which buttons show) and the
person's marks (cohorts read, files viewed, thread messages still editable by them, whether
an outside agent of theirs wrote findings, which changes the buttons on those). Two viewers
with the same `Viewer` at the same version get the same bytes, but for the CSRF token, which
is put in last (`CSRF_SLOT`). Without a version (Redis lost it) nothing is shared.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from reviews.models import ReviewSpace
from reviews.selectors import personal_marks
from reviews.web.presenters import review_context
from workspaces.models import Membership

CSRF_SLOT = "__quorum_csrf_slot__"
# The page cache (Django's cache: Redis in the full stack) keeps a version's sections this
# long; a new version is a new key, so this only bounds what an unused version occupies.
PAGE_CACHE_SECONDS = 120


@dataclass(frozen=True)
class Viewer:
    """Everything of the viewer a section's bytes depend on, but the CSRF token."""

    space_id: int
    round_number: int | None
    role: str
    marks: frozenset[str]
    # What the key cannot see from the live version: a space row changed without an event
    # (its title from GitHub), the repository archived (every button goes).
    space_stamp: str

    def digest(self) -> str:
        raw = repr((sorted(self.marks), self.space_stamp)).encode()
        return hashlib.sha256(raw).hexdigest()[:24]


def space_stamp(space: ReviewSpace) -> str:
    archived = space.pull_request.repository.archived_at
    return f"{space.updated_at.isoformat()}|{archived.isoformat() if archived else ''}"


def viewer_of(membership: Membership, space: ReviewSpace, round_number: int | None) -> Viewer:
    return Viewer(
        space.pk,
        round_number,
        membership.role,
        personal_marks(space.pk, membership.user_id),
        space_stamp(space),
    )


def render_sections(
    membership: Membership,
    space: ReviewSpace,
    round_number: int | None,
    names: Iterable[str],
    card: int | None = None,
) -> dict[str, str]:
    """The named sections (templates/reviews/sections/<name>.html) and, with `card`, that
    finding's card (key "card"), with `CSRF_SLOT` where the token goes."""
    context = {
        # `focus`: the card of a finding beyond its group's first page is loaded too.
        **review_context(membership, space, round_number, focus=card),
        "csrf_token": CSRF_SLOT,
    }
    parts: dict[str, str] = {
        n: render_to_string(f"reviews/sections/{n}.html", context) for n in names
    }
    views = context["page"].views
    # A duplicate has no card of its own: its canonical's card speaks for it.
    if card is not None and card in views and views[card].duplicate_of is None:
        context["node"] = context["page"].node(card)
        context["oob"] = True
        context["inline"] = card in context["inline_node_ids"]
        parts["card"] = render_to_string("reviews/partials/node.html", context)
    elif card is not None:
        parts["card"] = ""
    return parts


def with_csrf(html: str, token: str) -> str:
    return html.replace(CSRF_SLOT, token)


class SharedRenders:
    """The sections rendered in this process, per (version, viewer, card): a socket that needs
    a section another socket of the same kind already has at that version takes it; the
    sockets that need the same missing ones wait for one render (a lock per key)."""

    def __init__(self, size: int = 256) -> None:
        self.done: LRUCache[tuple[Any, ...], dict[str, str]] = LRUCache(maxsize=size)
        # A lock per key while anyone holds or waits for it, with how many do.
        self.locks: dict[tuple[Any, ...], tuple[asyncio.Lock, int]] = {}

    async def get(
        self,
        key: tuple[Any, ...],
        names: tuple[str, ...],
        render: Callable[[tuple[str, ...]], Awaitable[dict[str, str]]],
    ) -> dict[str, str]:
        lock, users = self.locks.get(key) or (asyncio.Lock(), 0)
        self.locks[key] = (lock, users + 1)
        try:
            async with lock:
                have = self.done.get(key) or {}
                missing = tuple(n for n in names if n not in have)
                if missing:
                    have = {**have, **await render(missing)}
                    self.done[key] = have
                return {n: have[n] for n in names}
        finally:
            lock, users = self.locks[key]
            if users > 1:
                self.locks[key] = (lock, users - 1)
            else:
                del self.locks[key]


def page_sections(
    membership: Membership,
    space: ReviewSpace,
    round_number: int | None,
    version: str,
    names: tuple[str, ...],
    csrf_token: str,
    wrote_ms: int = 0,
) -> tuple[dict[str, SafeString], str]:
    """The page's sections and the version they show: from the cache when this viewer's kind
    saw this version already (`version`: read before the data, like the socket's), or a render
    of an earlier version made within `QUORUM_PAGE_FRESH_MS` and after the viewer's own last
    write (`wrote_ms`); its socket then sends what changed since. Inside a transaction nothing
    is shared: a change it made is announced (and the version bumped) only when it commits."""
    if not version or connection.in_atomic_block:
        parts = render_sections(membership, space, round_number, names)
        return _with_token(parts, names, csrf_token), version
    viewer = viewer_of(membership, space, round_number)
    kind = f"{space.pk}:{round_number or 0}:{viewer.role}:{viewer.digest()}"
    key, recent_key = f"quorum:page:{kind}:{version}", f"quorum:page-recent:{kind}"
    started_ms = int(time.time() * 1000)
    found = cache.get_many([key, recent_key])
    cached: dict[str, str] | None = found.get(key)
    recent = found.get(recent_key)
    if cached is not None:
        parts = cached
    elif recent is not None and _serves(recent, started_ms, wrote_ms):
        version, parts = recent["version"], recent["parts"]
    else:
        parts = render_sections(membership, space, round_number, names)
        cache.set_many(
            {key: parts, recent_key: {"version": version, "at": started_ms, "parts": parts}},
            PAGE_CACHE_SECONDS,
        )
    return _with_token(parts, names, csrf_token), version


def _with_token(
    parts: dict[str, str], names: tuple[str, ...], csrf_token: str
) -> dict[str, SafeString]:
    return {n: mark_safe(with_csrf(parts[n], csrf_token)) for n in names}  # noqa: S308


def _serves(recent: dict[str, Any], now_ms: int, wrote_ms: int) -> bool:
    """A recent render stands in for the current version while it is fresh enough and began
    after the viewer's own last write (which it then shows)."""
    fresh_ms = settings.QUORUM_PAGE_FRESH_MS
    return bool(fresh_ms) and recent["at"] > wrote_ms and now_ms - recent["at"] <= fresh_ms
