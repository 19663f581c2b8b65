"""The shared cache (Redis) with a process-local stand-in while Redis does not answer.

The cache holds short-lived things only: allauth's rate limits on sign-in, sign-up and password
resets. A Redis restart must not turn every sign-in into a server error, nor switch the limits
off: while Redis is unreachable each call goes to a local in-memory cache instead, so a process
still limits what it sees (per process, not across processes: weaker, never absent). The outage
is logged once when it starts and once when Redis answers again.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

_UNREACHABLE = (RedisError, OSError)


class FallbackRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._local = LocMemCache(f"quorum-fallback-{id(self)}", {"TIMEOUT": self.default_timeout})
        self._down = False
        self._lock = threading.Lock()

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            result = getattr(super(), name)(*args, **kwargs)
        except _UNREACHABLE as exc:
            with self._lock:
                if not self._down:
                    self._down = True
                    log.warning("the cache (Redis) does not answer, using a local one: %s", exc)
            return getattr(self._local, name)(*args, **kwargs)
        if self._down:
            with self._lock:
                if self._down:
                    self._down = False
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
