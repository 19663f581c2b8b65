"""The two runs: one pull request alone on the idle stack (the reference), then the burst: the
webhooks sent within a couple of seconds, pages read and watched while the workers drain the
queue, and pushes to some pull requests while their round is under way."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx

from tests.bench.burst import records
from tests.bench.burst.clients import (
    Db,
    Hook,
    PageSocket,
    Reads,
    deliver,
    open_socket,
    read_pages,
    sample_lag,
)
from tests.bench.burst.scenario import Fakes

CATCH_UP_SECONDS = 60.0  # after the drain, how long the pages may take to catch up


@dataclass
class Context:
    port: int
    fakes: Fakes
    db: Db
    slug: str
    cookie: tuple[str, str]
    redis_url: str

    def http(self, connections: int) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        return httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{self.port}",
            cookies=dict([self.cookie]),
            timeout=60,
            limits=limits,
        )


@dataclass(frozen=True)
class Plan:
    pulls: list[int]  # in webhook order
    pushes: list[int]  # pull requests pushed to while their round runs
    pages: int  # review pages open (the first pull requests'), each with its socket
    list_pages: int  # reviews-list pages open
    readers: int
    spread: float  # the webhooks leave evenly over this many seconds
    timeout: float  # for the whole drain


@dataclass(frozen=True)
class Push:
    number: int
    state_before: str  # of the round it supersedes, when the push was sent
    stage_before: str
    hook: Hook


@dataclass
class Burst:
    hooks: list[Hook] = field(default_factory=list)
    pushes: list[Push] = field(default_factory=list)
    reads: Reads = field(default_factory=Reads)
    sockets: list[PageSocket] = field(default_factory=list)
    lags: list[tuple[float, int, int]] = field(default_factory=list)
    drained: bool = False
    ended: float = 0.0
    caught_up: float | None = None  # seconds after the drain until every page was current
    closed_by_server: int = 0  # sockets the server had closed before the benchmark did


async def wait_ended(ctx: Context, numbers: list[int], deadline: float) -> bool:
    """Until every round of these pull requests has ended (and no round at all is open)."""
    while time.time() < deadline:
        rows = [await ctx.db(records.rounds_of, n) for n in numbers]
        ended = all(r and r[-1].state not in records.OPEN_STATES for r in rows)
        if ended and await ctx.db(records.open_rounds) == 0:
            return True
        await asyncio.sleep(0.25)
    return False


async def run_alone(ctx: Context, number: int, timeout: float) -> Hook:
    async with ctx.http(4) as http:
        hook = await deliver(http, ctx.fakes, number, "opened")
    if not await wait_ended(ctx, [number], time.time() + timeout):
        raise RuntimeError(f"pull request {number} alone did not end within {timeout:.0f} s")
    return hook


async def push_mid_flight(ctx: Context, http: httpx.AsyncClient, number: int) -> Push:
    """Wait until the pull request's round is past prepare (its reviewers under way), then push
    a commit and deliver `synchronize`. A round that ended first is pushed to all the same."""
    rows: list[records.RoundRow] = []
    while True:
        rows = await ctx.db(records.rounds_of, number)
        last = rows[-1] if rows else None
        if last is not None and (
            last.state not in records.OPEN_STATES
            or (last.state == "running" and last.stage not in ("", "prepare"))
        ):
            break
        await asyncio.sleep(0.2)
    await asyncio.to_thread(ctx.fakes.push, number)
    hook = await deliver(http, ctx.fakes, number, "synchronize")
    return Push(number, rows[-1].state, rows[-1].stage, hook)


async def _send_all(
    ctx: Context,
    http: httpx.AsyncClient,
    plan: Plan,
    burst: Burst,
    spaces: dict[int, int],
    stop: asyncio.Event,
) -> list[asyncio.Task]:
    """The webhooks, evenly over `plan.spread` seconds; each answered one opens its page."""
    started = time.perf_counter()
    step = plan.spread / max(len(plan.pulls) - 1, 1)
    opening: list[asyncio.Task] = []

    async def one(index: int, number: int) -> None:
        await asyncio.sleep(max(0.0, started + index * step - time.perf_counter()))
        hook = await deliver(http, ctx.fakes, number, "opened")
        burst.hooks.append(hook)
        space_id = await ctx.db(records.space_of, number)
        if space_id is None:
            return
        spaces[number] = space_id
        if index < plan.pages:
            socket = PageSocket(number, space_id)
            burst.sockets.append(socket)
            opening.append(
                asyncio.create_task(open_socket(http, ctx.port, ctx.slug, socket, ctx.cookie, stop))
            )

    await asyncio.gather(*(one(i, n) for i, n in enumerate(plan.pulls)))
    return opening


def _current(burst: Burst) -> bool:
    """Every open review page shows the server's version and its verdict."""
    pages = [s for s in burst.sockets if s.space_id is not None]
    latest: dict[int, int] = {}
    for _, index, lag in burst.lags:
        latest[index] = lag
    behind = any(latest.get(burst.sockets.index(s), 1) > 0 for s in pages)
    return not behind and all(s.verdict_arrival() is not None for s in pages)


async def run_burst(ctx: Context, plan: Plan) -> Burst:
    burst = Burst()
    spaces: dict[int, int] = {}
    reading, watching = asyncio.Event(), asyncio.Event()  # set: stop
    opening: list[asyncio.Task] = []
    deadline = time.time() + plan.timeout
    async with ctx.http(plan.readers + plan.pages + 40) as http:
        for _ in range(plan.list_pages):
            socket = PageSocket(None, None)
            burst.sockets.append(socket)
            opening.append(
                asyncio.create_task(
                    open_socket(http, ctx.port, ctx.slug, socket, ctx.cookie, watching)
                )
            )
        readers = asyncio.create_task(read_pages(http, ctx.slug, spaces, plan.readers, reading))
        lagging = asyncio.create_task(
            sample_lag(burst.sockets, ctx.redis_url, watching, burst.lags)
        )
        pushing = [asyncio.create_task(push_mid_flight(ctx, http, n)) for n in plan.pushes]
        try:
            opening += await _send_all(ctx, http, plan, burst, spaces, watching)
            burst.pushes = list(await asyncio.wait_for(asyncio.gather(*pushing), plan.timeout))
            burst.drained = await wait_ended(ctx, plan.pulls, deadline)
            burst.ended = time.time()
            reading.set()  # the people stop reading; the open pages catch up
            while time.time() < burst.ended + CATCH_UP_SECONDS:
                await asyncio.sleep(0.5)
                if _current(burst):
                    burst.caught_up = round(time.time() - burst.ended, 1)
                    break
        finally:
            reading.set()
            watching.set()
            for task in pushing:
                task.cancel()
            burst.reads = await readers
            await lagging
            await asyncio.gather(*opening, return_exceptions=True)
            burst.closed_by_server = sum(1 for s in burst.sockets if s.client and s.client.closed)
            await asyncio.gather(
                *(s.client.close() for s in burst.sockets if s.client is not None),
                return_exceptions=True,
            )
    return burst
