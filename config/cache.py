"""The shared cache (Redis) with a process-local stand-in while Redis does not answer.

The cache holds short-lived things only: allauth's rate limits on sign-in, sign-up and password
resets. A Redis restart must not turn every sign-in into a server error, nor switch the limits
off: while Redis is unreachable each call goes to a local in-memory cache instead, so a process
still limits what it sees (per process, not across processes: weaker, never absent). The outage
is logged once when it starts and once when Redis answers again.

Django keeps a cache object per request context, and under ASGI every request runs in a context
of its own: each request got a new cache object, and with it a new Redis connection pool (a TCP
connection and its handshake per page load) and a new, empty local stand-in. The pools and the
stand-in are therefore kept per process and server (`_pools`, `_outages`), not per object.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

_UNREACHABLE = (RedisError, OSError)
_lock = threading.Lock()
_pools: dict[tuple[str, str], Any] = {}
_outages: dict[str, _Outage] = {}


class _SharedPoolClient(RedisCacheClient):
    """Django's Redis client, with one connection pool per server and options in the process
    (redis-py's pools are thread-safe and start afresh in a forked child)."""

    def _get_connection_pool(self, write: bool) -> Any:
        own: Any = self  # the stubs do not declare the client's private attributes
        server = own._servers[own._get_connection_pool_index(write)]
        options = own._pool_options
        key = (server, repr(sorted(options.items(), key=lambda item: item[0])))
        with _lock:
            if key not in _pools:
                _pools[key] = own._pool_class.from_url(server, **options)
            return _pools[key]


class _Outage:
    """Whether a server is down, and the local stand-in used meanwhile: one per server."""

    def __init__(self, location: str, timeout: float | None) -> None:
        self.local = LocMemCache(f"quorum-fallback-{location}", {"TIMEOUT": timeout})
        self.down = False
        self.lock = threading.Lock()


class FallbackRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _SharedPoolClient
        with _lock:
            if server not in _outages:
                _outages[server] = _Outage(server, self.default_timeout)
            outage = _outages[server]
        self._local, self._outage = outage.local, outage

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            result = getattr(super(), name)(*args, **kwargs)
        except _UNREACHABLE as exc:
            with self._outage.lock:
                if not self._outage.down:
                    self._outage.down = True
                    log.warning("the cache (Redis) does not answer, using a local one: %s", exc)
            return getattr(self._local, name)(*args, **kwargs)
        if self._outage.down:
            with self._outage.lock:
                if self._outage.down:
                    self._outage.down = False
                    log.warning("the cache (Redis) answers again")
        return result

    def add(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("add", *args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("get", *args, **kwargs)

    def set(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("set", *args, **kwargs)

    def touch(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("touch", *args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("delete", *args, **kwargs)

    def get_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("get_many", *args, **kwargs)

    def has_key(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("has_key", *args, **kwargs)

    def incr(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("incr", *args, **kwargs)

    def set_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("set_many", *args, **kwargs)

    def delete_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("delete_many", *args, **kwargs)

    def clear(self) -> Any:
        return self._call("clear")
