"""At most `QUORUM_REQUESTS_AT_ONCE` HTTP requests of a process run Django at once; the others
wait their turn in the event loop, where waiting costs nothing.

Django runs each request's view on a thread of its own (asgiref gives every request its own
thread-sensitive context) and the thread holds a connection of the process's database pool
until the request ends. Twenty people loading pages at once were twenty threads taking turns
on one interpreter lock with every connection of the pool out, and the live pages' renders,
which need a connection too, waited over a second for one. A request leaves the queue to the
next as soon as its answer starts (a long download does not hold the others up).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

Scope = dict[str, Any]


class RequestsAtOnce:
    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit
        # One semaphore per event loop: the server has one, tests start several.
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = asyncio.Semaphore(self.limit)
        return turns

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.limit <= 0:
            await self.app(scope, receive, send)
            return
        turns = self._semaphore()
        await turns.acquire()
        held = True

        def done() -> None:
            nonlocal held
            if held:
                held = False
                turns.release()

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                done()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            done()
