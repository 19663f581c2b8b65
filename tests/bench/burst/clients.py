"""The clients of the burst, on one asyncio loop: GitHub's webhook deliveries, people reading
review pages, and the websockets of open pages, speaking what the browser speaks (the session
cookie, the page's `?v=` version, the htmx ws extension's messages)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import re
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import redis.asyncio as aioredis

from tests.bench.burst.scenario import NAME, OWNER, WEBHOOK_SECRET, Fakes
from tests.bench.wsclient import HandshakeFailed, WsClient
from tests.fakes.github_server import pull_request_payload, sign

VERSION = re.compile(r'id="live-version"[^>]*data-version="([0-9a-f]*)-(\d+)"')
# The header's badge once a verdict exists ("verdict-pending" is the placeholder).
VERDICT = re.compile(r'class="verdict verdict-(ship|hold|block)"')
PAGE_VERSION = re.compile(r'ws-connect="/ws/reviews/\d+/\?v=([^"&]*)')


class Db:
    """The ORM on one thread of its own: one connection, and the event loop never blocks."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db")

    async def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def close(self, closer: Callable[[], None]) -> None:
        self.pool.submit(closer).result()
        self.pool.shutdown()


@dataclass
class Hook:
    number: int
    action: str
    sent: float  # time.time() when the request left
    seconds: float  # until the answer
    status: int
    rounds: list[int]
    detail: str


async def deliver(http: httpx.AsyncClient, fakes: Fakes, number: int, action: str) -> Hook:
    """A signed `pull_request` delivery for the pull request's current state, as GitHub sends."""
    payload = pull_request_payload(fakes.github, OWNER, NAME, number, action=action)
    body = json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/fake",
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(WEBHOOK_SECRET.encode(), body),
    }
    sent, began = time.time(), time.perf_counter()
    try:
        answer = await http.post("/webhooks/github/", content=body, headers=headers)
    except httpx.HTTPError as error:
        return Hook(number, action, sent, time.perf_counter() - began, 0, [], repr(error))
    seconds = time.perf_counter() - began
    data = (
        answer.json()
        if answer.headers.get("content-type", "").startswith("application/json")
        else {}
    )
    return Hook(
        number,
        action,
        sent,
        seconds,
        answer.status_code,
        list(data.get("rounds", [])),
        str(data.get("detail", answer.text[:200])),
    )


@dataclass
class Reads:
    """Review page loads by people: (seconds, status) each."""

    samples: list[tuple[float, int]] = field(default_factory=list)


async def read_pages(
    http: httpx.AsyncClient, slug: str, spaces: dict[int, int], readers: int, stop: asyncio.Event
) -> Reads:
    """`readers` people each loading a review page (one of those that exist, at random) again
    and again until `stop`."""
    reads = Reads()

    async def reader() -> None:
        while not stop.is_set():
            if not spaces:
                await asyncio.sleep(0.05)
                continue
            space_id = random.choice(list(spaces.values()))
            began = time.perf_counter()
            try:
                answer = await http.get(f"/w/{slug}/reviews/{space_id}/")
                status = answer.status_code
            except httpx.HTTPError:
                status = 0
            reads.samples.append((time.perf_counter() - began, status))

    await asyncio.gather(*(reader() for _ in range(readers)))
    return reads


@dataclass
class PageSocket:
    """The socket of one open page: a review page (`space_id`) or the reviews list (None)."""

    number: int | None
    space_id: int | None
    client: WsClient | None = None  # the connected one, once a handshake succeeded
    failures: list[str] = field(default_factory=list)  # every handshake that did not

    @property
    def connected(self) -> bool:
        return self.client is not None

    def versions(self) -> list[tuple[float, int]]:
        if self.client is None:
            return []
        return [
            (arrived, int(m.group(2)))
            for arrived, text in self.client.messages
            if (m := VERSION.search(text))
        ]

    def version_at(self, moment: float) -> int:
        seen = [n for arrived, n in self.versions() if arrived <= moment]
        return max(seen, default=0)

    def versions_skipped(self) -> int:
        """Versions between the sync and the last message that never arrived as a message of
        their own (each change is one message carrying its version)."""
        seen = sorted({n for _, n in self.versions()})
        return (seen[-1] - seen[0]) - (len(seen) - 1) if seen else 0

    def verdict_arrival(self) -> float | None:
        if self.client is None:
            return None
        return next((at for at, text in self.client.messages if VERDICT.search(text)), None)


async def open_socket(
    http: httpx.AsyncClient,
    port: int,
    slug: str,
    socket: PageSocket,
    cookie: tuple[str, str],
    stop: asyncio.Event,
) -> PageSocket:
    """Load the page as a browser does, then open the socket its ws-connect names and wait for
    the first message (the sync). A handshake that fails is tried again as the htmx ws
    extension does after an abnormal closure: the same URL, after a full-jitter delay (up to
    1, 2, 4 … 64 s), until `stop`."""
    path = f"/ws/reviews/list/{slug}/"
    for attempt in itertools.count():
        try:
            if socket.space_id is not None and "?v=" not in path:
                page = await http.get(f"/w/{slug}/reviews/{socket.space_id}/")
                found = PAGE_VERSION.search(page.text)
                if page.status_code != 200 or found is None:
                    raise HandshakeFailed(f"page answered {page.status_code} without ws-connect")
                path = f"/ws/reviews/{socket.space_id}/?v={found.group(1)}"
            client = WsClient(port, path, cookie)
            await asyncio.wait_for(client.connect(), 10)
            if socket.space_id is not None:  # the list sends nothing until a row moves
                await asyncio.wait_for(client.first.wait(), 10)
                if client.closed:
                    raise HandshakeFailed(f"closed before its sync ({client.close_code})")
            socket.client = client
            return socket
        except (HandshakeFailed, OSError, TimeoutError, httpx.HTTPError) as error:
            socket.failures.append(repr(error))
        delay = random.random() * 2 ** min(attempt, 6)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        if stop.is_set():
            break
    return socket


async def sample_lag(
    sockets: list[PageSocket],
    redis_url: str,
    stop: asyncio.Event,
    lags: list[tuple[float, int, int]],
    every: float = 0.2,
) -> None:
    """Appends (when, socket index, versions behind) to `lags` as it goes: the space's version
    in Redis against the latest version marker the socket received."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        while not stop.is_set():
            for index, socket in enumerate(sockets):
                if socket.space_id is None or socket.client is None:
                    continue
                raw = await client.hget(f"quorum:live:space:{socket.space_id}", "n")
                now = time.time()
                server = int(raw) if raw else 0
                lags.append((now, index, server - socket.version_at(now)))
            await asyncio.sleep(every)
    finally:
        await client.aclose()
