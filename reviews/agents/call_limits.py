"""How many model calls a process has in flight, per process and per provider, and what a 429
does; and the stop token that ends a run whose round no longer wants it.

A worker runs each step on a thread of its own, and each step runs its model calls on an event
loop of its own (`asyncio.run`), so a limit shared by the whole process must work across
threads and loops: `Gate` hands out slots under a lock and wakes a waiting call on its own loop
(`call_soon_threadsafe`), first come first served. A call holds one slot of the process and one
of its provider (the endpoint: provider and base URL) from the moment its request is sent until
its answer has been read.

A 429 is the provider saying "too many at once": the call gives its slots back, the provider's
calls all wait (its `Retry-After`, `retry-after-ms`, or a doubling backoff), and the same
request is sent again, up to `RETRIES_429` times; after that the 429 reaches the runtime,
which reports it as a retryable `rate_limited` error. A refused request is not billed, so
these retries cost no tokens (unlike the SDK's own retries, which stay off).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import random
import ssl
import threading
import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx2

DEFAULT_PER_PROCESS = 64
DEFAULT_PER_PROVIDER = 32
RETRIES_429 = 4
FIRST_WAIT_429 = 1.0  # seconds; doubles with each 429 of the same call
LONGEST_WAIT_429 = 30.0


@dataclass
class _Limit:
    """One counting semaphore shared by threads and event loops."""

    size: int
    used: int = 0
    waiting: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=deque
    )
    granted: set[asyncio.Future[None]] = field(default_factory=set)  # handed a slot, not awake


class Gate:
    """The process's limits on model calls in flight (see the module's docstring)."""

    def __init__(self, per_process: int, per_provider: int) -> None:
        self._lock = threading.Lock()
        self.per_provider = per_provider
        self._process = _Limit(per_process)
        self._providers: dict[str, _Limit] = {}
        self._not_before: dict[str, float] = {}
        self.peak = 0  # the most calls this process had in flight at once
        self.peak_by_provider: dict[str, int] = {}

    def in_flight(self, provider: str | None = None) -> int:
        with self._lock:
            if provider is None:
                return self._process.used
            limit = self._providers.get(provider)
            return limit.used if limit is not None else 0

    def _provider(self, key: str) -> _Limit:
        limit = self._providers.get(key)
        if limit is None:
            limit = self._providers[key] = _Limit(self.per_provider)
        return limit

    async def _take(self, limit: _Limit) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if limit.used < limit.size and not limit.waiting:
                limit.used += 1
                return
            waiter: asyncio.Future[None] = loop.create_future()
            limit.waiting.append((loop, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                if waiter in limit.granted:
                    limit.granted.discard(waiter)
                    self._give(limit)  # granted as it was cancelled: pass it on
                else:
                    with contextlib.suppress(ValueError):
                        limit.waiting.remove((loop, waiter))
            raise
        with self._lock:
            limit.granted.discard(waiter)

    def _give(self, limit: _Limit) -> None:
        """Under the lock: hand the slot to the first waiter still waiting, or free it."""
        while limit.waiting:
            loop, waiter = limit.waiting.popleft()
            if waiter.done():
                continue
            try:
                loop.call_soon_threadsafe(_grant, waiter)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                continue
            limit.granted.add(waiter)
            return  # the slot passes on: `used` stays
        limit.used -= 1

    def _put(self, limit: _Limit) -> None:
        with self._lock:
            self._give(limit)

    async def acquire(self, provider: str) -> None:
        """Wait for the provider's backoff, then a slot of the provider and of the process."""
        while (wait := self._not_before.get(provider, 0.0) - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        with self._lock:
            limit = self._provider(provider)
        await self._take(limit)
        try:
            await self._take(self._process)
        except BaseException:
            self._put(limit)
            raise
        with self._lock:
            self.peak = max(self.peak, self._process.used)
            self.peak_by_provider[provider] = max(
                self.peak_by_provider.get(provider, 0), limit.used
            )

    def release(self, provider: str) -> None:
        self._put(self._process)
        with self._lock:
            limit = self._provider(provider)
        self._put(limit)

    def back_off(self, provider: str, seconds: float) -> None:
        """The provider said 429: none of its calls go out for `seconds`."""
        with self._lock:
            until = time.monotonic() + seconds
            self._not_before[provider] = max(self._not_before.get(provider, 0.0), until)


def _grant(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


_gate = Gate(DEFAULT_PER_PROCESS, DEFAULT_PER_PROVIDER)


def configure(*, per_process: int, per_provider: int) -> None:
    """Set this process's limits (the settings call it at start, before any model call)."""
    global _gate
    _gate = Gate(max(per_process, 1), max(per_provider, 1))


def gate() -> Gate:
    return _gate


def retry_after(response: httpx2.Response, attempt: int) -> float:
    """Seconds to wait after a 429: what the provider asked for, else a doubling backoff with
    jitter, never longer than LONGEST_WAIT_429."""
    headers = response.headers
    asked: float | None = None
    if (ms := headers.get("retry-after-ms")) is not None:
        with contextlib.suppress(ValueError):
            asked = float(ms) / 1000
    if asked is None and (value := headers.get("retry-after")) is not None:
        try:
            asked = float(value)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value) if value else None
            asked = when.timestamp() - time.time() if when is not None else None
    if asked is None:
        asked = FIRST_WAIT_429 * 2**attempt * (0.5 + random.random() / 2)  # noqa: S311
    return min(max(asked, 0.0), LONGEST_WAIT_429)


class _Released(httpx2.AsyncByteStream):
    """The answer's body; the call's slots go back once it has been read (or dropped)."""

    def __init__(self, stream: httpx2.AsyncByteStream, release) -> None:
        self._stream, self._release = stream, release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            self._release()


class LimitedTransport(httpx2.AsyncBaseTransport):
    """The model client's transport: each request waits for its slots, and a 429 is waited out
    and sent again (see the module's docstring)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, provider: str) -> None:
        self._inner, self.provider = inner, provider

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        attempt = 0
        while True:
            limits = gate()
            await limits.acquire(self.provider)
            released = False

            def release(limits: Gate = limits) -> None:
                nonlocal released
                if not released:
                    released = True
                    limits.release(self.provider)

            try:
                response = await self._inner.handle_async_request(request)
            except BaseException:
                release()
                raise
            if response.status_code != 429 or attempt >= RETRIES_429:
                assert isinstance(response.stream, httpx2.AsyncByteStream)
                response.stream = _Released(response.stream, release)
                return response
            wait = retry_after(response, attempt)
            await response.aclose()
            release()
            limits.back_off(self.provider, wait)
            attempt += 1

    async def aclose(self) -> None:
        await self._inner.aclose()


class StopToken:
    """Stops the runs it is given to (ModelRuntime.run's `stop`) from any thread: their tasks are
    cancelled on their own loops, in-flight requests included, and a run given it later stops
    at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: list[tuple[asyncio.AbstractEventLoop, asyncio.Task]] = []
        self.stopped = False
        self.reason = ""

    def bind(self, task: asyncio.Task) -> None:
        loop = task.get_loop()
        with self._lock:
            if not self.stopped:
                self._tasks.append((loop, task))
                return
        task.cancel()

    def unbind(self, task: asyncio.Task) -> None:
        with self._lock:
            self._tasks = [(loop, t) for loop, t in self._tasks if t is not task]

    def stop(self, reason: str) -> None:
        with self._lock:
            if self.stopped:
                return
            self.stopped, self.reason = True, reason
            tasks, self._tasks = self._tasks, []
        for loop, task in tasks:
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                loop.call_soon_threadsafe(task.cancel)


# What the SDKs' own clients allow (openai's and anthropic's DEFAULT_CONNECTION_LIMITS).
_CONNECTION_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every model client of the process. Building one reads the CA bundle
    (about 30 ms of CPU), and a round builds a client per run: a reviewer, each lens. The
    context holds no connection, so clients on different event loops share it safely."""
    return httpx2.create_ssl_context()


def limited_transport(provider: str, base_url: str) -> LimitedTransport:
    """A model client's transport: the process's limits and the 429 wait over httpx's own,
    through the proxy the environment names for the endpoint (a client given a transport no
    longer reads the environment itself)."""
    url = httpx2.URL(base_url)
    proxies = urllib.request.getproxies()
    proxy = None
    if not urllib.request.proxy_bypass(url.host):
        proxy = proxies.get(url.scheme) or proxies.get("all")
    inner = httpx2.AsyncHTTPTransport(verify=_tls_context(), limits=_CONNECTION_LIMITS, proxy=proxy)
    return LimitedTransport(inner, provider=f"{provider} {url.scheme}://{url.host}:{url.port}")
