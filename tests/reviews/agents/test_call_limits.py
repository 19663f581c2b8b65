"""The process's limits on model calls in flight, across threads each running its own event
loop as a worker's steps do; the 429 wait; and stopping a run from another thread."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.agents import call_limits
from reviews.agents.call_limits import Gate, StopToken, retry_after
from reviews.agents.model_errors import ModelRunError
from reviews.agents.model_run_types import ModelConfig, ReviewTools
from reviews.agents.runtime import ModelRuntime
from tests.fakes.model_server import Fail, FakeModelServer, Script, text


def _run_threads(count: int, work) -> None:
    threads = [threading.Thread(target=lambda i=i: asyncio.run(work(i))) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()


def test_the_limits_hold_across_threads_and_event_loops():
    gate = Gate(per_process=5, per_provider=3)
    out = {"a": 0, "b": 0, "all": 0}
    seen = {"a": 0, "b": 0, "all": 0}
    lock = threading.Lock()

    async def call(i: int) -> None:
        provider = "a" if i % 2 else "b"
        await gate.acquire(provider)
        with lock:
            out[provider] += 1
            out["all"] += 1
            for key in (provider, "all"):
                seen[key] = max(seen[key], out[key])
        await asyncio.sleep(0.05)
        with lock:
            out[provider] -= 1
            out["all"] -= 1
        gate.release(provider)

    _run_threads(24, call)
    assert seen["a"] <= 3 and seen["b"] <= 3 and seen["all"] <= 5
    assert seen["all"] >= 4  # both providers' calls were out together
    assert gate.in_flight() == 0 and gate.in_flight("a") == 0


def test_a_waiting_call_that_is_cancelled_gives_its_turn_on():
    gate = Gate(per_process=1, per_provider=1)
    done: list[str] = []

    async def main() -> None:
        await gate.acquire("p")
        waiting = asyncio.ensure_future(gate.acquire("p"))
        behind = asyncio.ensure_future(gate.acquire("p"))
        await asyncio.sleep(0.01)
        gate.release("p")  # handed to `waiting`, which is cancelled before it wakes
        waiting.cancel()
        await asyncio.wait_for(behind, timeout=2)
        done.append("behind")
        gate.release("p")

    asyncio.run(main())
    assert done == ["behind"] and gate.in_flight() == 0


@given(
    ms=st.one_of(st.none(), st.integers(min_value=0, max_value=100_000)),
    seconds=st.one_of(st.none(), st.integers(min_value=0, max_value=1000)),
    attempt=st.integers(min_value=0, max_value=10),
)
def test_the_wait_after_a_429_is_bounded(ms, seconds, attempt):
    headers = {}
    if ms is not None:
        headers["retry-after-ms"] = str(ms)
    if seconds is not None:
        headers["retry-after"] = str(seconds)
    wait = retry_after(httpx2.Response(429, headers=headers), attempt)
    assert 0 <= wait <= call_limits.LONGEST_WAIT_429
    if ms is not None:
        assert wait == min(ms / 1000, call_limits.LONGEST_WAIT_429)
    elif seconds is not None:
        assert wait == min(seconds, call_limits.LONGEST_WAIT_429)


def _runtime(fake: FakeModelServer, model: str) -> ModelRuntime:
    return ModelRuntime(
        ModelConfig(provider="openai", model=model, base_url=fake.openai_base_url, timeout=30)
    )


def _ask(runtime: ModelRuntime, fake: FakeModelServer, stop: StopToken | None = None):
    return runtime.run_sync(
        api_key=fake.api_key,
        system_prompt="You review code.",
        user_prompt="Review it.",
        tools=ReviewTools(),
        stop=stop,
    )


def test_a_429_is_sent_again_after_its_retry_after(fake_model: FakeModelServer):
    asked: list[int] = []

    def busy_once(conversation):
        asked.append(conversation.turn)
        return Fail(429, retry_after=0.5) if len(asked) == 1 else text("done")

    fake_model.add_script(Script("busy", (busy_once,)), model="busy-model")
    started = time.monotonic()
    outcome = _ask(_runtime(fake_model, "busy-model"), fake_model)
    assert outcome.output == "done"
    assert time.monotonic() - started >= 0.5
    assert [r.status for r in fake_model.recorded("openai")] == [429, 200]
    assert outcome.usage.requests == 1  # the refused request is not billed


def test_stopping_cancels_the_request_in_flight(fake_model: FakeModelServer):
    fake_model.add_script(Script("slow", (text("late", latency=5.0),)), model="slow-model")
    stop = StopToken()

    def supersede_once_sent() -> None:
        # Once the server has the request (a cold worker can take longer than a fixed delay to
        # send it, and a run stopped before sending owes nothing).
        deadline = time.monotonic() + 30
        while not fake_model.recorded("openai") and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.stop("the round was superseded")

    threading.Thread(target=supersede_once_sent, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(ModelRunError) as caught:
        _ask(_runtime(fake_model, "slow-model"), fake_model, stop)
    assert time.monotonic() - started < 4.0  # the answer would take 5 s
    assert caught.value.kind == "stopped" and not caught.value.retryable
    assert caught.value.usage.requests == 1  # sent, so paid for
    assert call_limits.gate().in_flight() == 0  # its slots were given back


def test_a_stopped_token_stops_a_run_before_it_asks():
    stop = StopToken()
    stop.stop("cancelled")
    fake = FakeModelServer().start()
    try:
        with pytest.raises(ModelRunError) as caught:
            _ask(_runtime(fake, "any"), fake, stop)
        assert caught.value.kind == "stopped"
        assert fake.recorded() == []
    finally:
        fake.stop()
