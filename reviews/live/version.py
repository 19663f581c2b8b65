"""The version of a review space's live state, so a socket that connects can tell what its page
missed instead of re-sending the whole page.

Every event sent to a space's group first bumps the space's version and stamps the sections the
event can change with it (reviews/live/events.py). The page is rendered with the version it read
BEFORE reading the database, so a change that lands while it renders is never taken as seen:
at worst it is sent again. On connect the consumer sends only the sections stamped after the
page's version (`sections_since`).

The state lives in one Redis hash per space (`epoch`, `n`, `s:<section>`), bumped by one Lua
script so the counter and the stamps move together. The epoch is random per hash: after a
flush, an eviction or the expiry, a page's version belongs to another epoch and gets every
section. Without Redis (the embedded default: one process) a dict under a lock does the same.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from django.conf import settings

EXPIRE_SECONDS = 14 * 24 * 3600

# KEYS[1]: the hash; ARGV[1]: a fresh epoch (used only if the hash is new); ARGV[2]: expiry;
# ARGV[3..]: the sections the event changes. Returns {epoch, n}.
_BUMP = """
redis.call('HSETNX', KEYS[1], 'epoch', ARGV[1])
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
for i = 3, #ARGV do redis.call('HSET', KEYS[1], 's:' .. ARGV[i], n) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {redis.call('HGET', KEYS[1], 'epoch'), n}
"""


@dataclass(frozen=True)
class LiveState:
    epoch: str
    n: int
    stamps: dict[str, int] = field(default_factory=dict)

    @property
    def token(self) -> str:
        return f"{self.epoch}-{self.n}"


def sections_since(page_token: str, state: LiveState | None, sections: tuple[str, ...]) -> tuple:
    """The sections a page rendered at `page_token` may show out of date. Anything it cannot
    vouch for (no token, no state, another epoch, a version from the future) is all of them."""
    epoch, _, raw = page_token.partition("-")
    if state is None or not raw.isdigit() or epoch != state.epoch or int(raw) > state.n:
        return sections
    seen = int(raw)
    return tuple(s for s in sections if state.stamps.get(s, 0) > seen)


def _key(space_id: int) -> str:
    return f"quorum:live:space:{space_id}"


def _parse(raw: dict[bytes, bytes]) -> LiveState | None:
    values = {k.decode(): v.decode() for k, v in raw.items()}
    if "epoch" not in values or not values.get("n", "").isdigit():
        return None
    stamps = {k[2:]: int(v) for k, v in values.items() if k.startswith("s:") and v.isdigit()}
    return LiveState(values["epoch"], int(values["n"]), stamps)


class _RedisStore:
    def __init__(self, url: str) -> None:
        import redis

        self.client: Any = redis.Redis.from_url(url)
        self.bump_script = self.client.register_script(_BUMP)

    def bump(self, space_id: int, sections: tuple[str, ...]) -> str:
        args: list[str | int] = [secrets.token_hex(6), EXPIRE_SECONDS, *sections]
        epoch, n = self.bump_script(keys=[_key(space_id)], args=args)
        return f"{epoch.decode()}-{n}"

    def read(self, space_id: int) -> LiveState | None:
        return _parse(self.client.hgetall(_key(space_id)))

    def start(self, space_id: int) -> LiveState | None:
        """The state, created at version 0 when missing (nothing is stamped yet)."""
        pipe = self.client.pipeline()
        pipe.hsetnx(_key(space_id), "epoch", secrets.token_hex(6))
        pipe.hsetnx(_key(space_id), "n", 0)
        pipe.expire(_key(space_id), EXPIRE_SECONDS)
        pipe.hgetall(_key(space_id))
        return _parse(pipe.execute()[-1])

    def forget(self, space_id: int) -> None:
        self.client.delete(_key(space_id))


class _LocalStore:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.states: dict[int, LiveState] = {}

    def bump(self, space_id: int, sections: tuple[str, ...]) -> str:
        with self.lock:
            old = self.states.get(space_id) or LiveState(secrets.token_hex(6), 0)
            n = old.n + 1
            new = LiveState(old.epoch, n, {**old.stamps, **dict.fromkeys(sections, n)})
            self.states[space_id] = new
            return new.token

    def read(self, space_id: int) -> LiveState | None:
        with self.lock:
            return self.states.get(space_id)

    def start(self, space_id: int) -> LiveState | None:
        with self.lock:
            return self.states.setdefault(space_id, LiveState(secrets.token_hex(6), 0))

    def forget(self, space_id: int) -> None:
        with self.lock:
            self.states.pop(space_id, None)


@cache
def _store(url: str) -> _RedisStore | _LocalStore:
    return _RedisStore(url) if url else _LocalStore()


def store() -> _RedisStore | _LocalStore:
    return _store(settings.REDIS_URL or "")


def page_token(space_id: int) -> str:
    """The version a page about to be rendered shows; "" (a full sync) when Redis is down."""
    try:
        state = store().start(space_id)
    except Exception:  # the page renders anyway; its socket then syncs everything
        return ""
    return state.token if state else ""


def bump(space_id: int, sections: tuple[str, ...]) -> str:
    """Called before an event is sent. If the bump fails, the state is dropped (best effort) so
    no page can be told it is current."""
    try:
        return store().bump(space_id, sections)
    except Exception:
        with contextlib.suppress(Exception):  # Redis is gone: connects find no state at all
            store().forget(space_id)
        raise


def current(space_id: int) -> LiveState | None:
    try:
        return store().read(space_id)
    except Exception:
        return None
