"""A web process runs a bounded number of requests at once and queues the rest in order; a
request gives its turn to the next as soon as its answer starts, and whatever way it ends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application

from config.requests_at_once import RequestsAtOnce


def _scope(path: str = "/", kind: str = "http") -> dict[str, Any]:
    return {
        "type": kind,
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
        "scheme": "http",
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 1234),
        "http_version": "1.1",
        "asgi": {"version": "3.0"},
    }


class Gate:
    """An app that answers once told to, recording which requests ran at once and in which
    order they began."""

    def __init__(self, *, stream: bool = False) -> None:
        self.running = 0
        self.most = 0
        self.began: list[str] = []
        self.go = asyncio.Event()
        self.stream = stream

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        self.running += 1
        self.most = max(self.most, self.running)
        self.began.append(scope["path"])
        try:
            if self.stream:  # the answer starts at once, its body comes later
                await send({"type": "http.response.start", "status": 200, "headers": []})
                await self.go.wait()
                await send({"type": "http.response.body", "body": b"done"})
                return
            await self.go.wait()
            if scope["path"] == "/fails":
                raise RuntimeError("the view failed")
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
        finally:
            self.running -= 1


async def _request(app: Any, path: str) -> list[dict]:
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(_scope(path), receive, send)
    return sent


async def _at_once(limit: int, count: int) -> tuple[list[str], Gate, list[list[dict]]]:
    """`count` requests sent together through a bound of `limit`: those that began before any
    was answered, the app, and every answer."""
    gate = Gate()
    app = RequestsAtOnce(gate, limit)
    tasks = [asyncio.create_task(_request(app, f"/{n}")) for n in range(count)]
    await asyncio.sleep(0.05)
    began = list(gate.began)
    gate.go.set()
    return began, gate, await asyncio.wait_for(asyncio.gather(*tasks), 5)


def test_at_most_the_limit_run_at_once_and_the_others_wait_in_order():
    began, gate, answers = asyncio.run(_at_once(2, 6))
    assert began == ["/0", "/1"]  # the rest wait their turn, without starting
    assert gate.most == 2
    assert gate.began == [f"/{n}" for n in range(6)]
    assert all(a[-1]["body"] == b"ok" for a in answers)


def test_a_request_gives_its_turn_when_its_answer_starts():
    """A long download holds no turn: the next request runs while its body still streams."""

    async def scenario():
        gate = Gate(stream=True)
        app = RequestsAtOnce(gate, 1)
        first = asyncio.create_task(_request(app, "/download"))
        second = asyncio.create_task(_request(app, "/page"))
        await asyncio.sleep(0.05)
        began = list(gate.began)
        gate.go.set()
        await asyncio.gather(first, second)
        return began

    assert asyncio.run(scenario()) == ["/download", "/page"]


def test_a_request_that_fails_gives_its_turn_back():
    async def scenario():
        gate = Gate()
        app = RequestsAtOnce(gate, 1)
        failing = asyncio.create_task(_request(app, "/fails"))
        after = asyncio.create_task(_request(app, "/after"))
        gate.go.set()
        with pytest.raises(RuntimeError):
            await failing
        return await asyncio.wait_for(after, 2)

    assert asyncio.run(scenario())[-1]["body"] == b"ok"


def test_no_bound_at_zero():
    began, gate, _answers = asyncio.run(_at_once(0, 4))
    assert len(began) == 4 and gate.most == 4


def test_django_answers_every_request_of_a_queue():
    """The real Django application behind a bound of one: three requests at once all get their
    answer."""
    app = RequestsAtOnce(get_asgi_application(), 1)

    async def one() -> int:
        client = ApplicationCommunicator(app, _scope("/healthz"))
        await client.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await client.receive_output(10)
        await client.receive_output(10)
        return start["status"]

    async def scenario():
        return await asyncio.gather(one(), one(), one())

    assert asyncio.run(scenario()) == [200, 200, 200]
