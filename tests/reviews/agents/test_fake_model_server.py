"""The fake model provider behaves like the real APIs where our code can tell the difference."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import (
    Conversation,
    FakeModelServer,
    Reply,
    Script,
    calls,
    prose_only,
    slow,
    text,
)


def _openai(fake: FakeModelServer, body: Any, key: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {key or fake.api_key}"}
    content = body if isinstance(body, str) else json.dumps(body)
    return httpx.post(f"{fake.openai_base_url}/chat/completions", content=content, headers=headers)


def _anthropic(fake: FakeModelServer, body: Any, key: str | None = None) -> httpx.Response:
    headers = {"x-api-key": key or fake.api_key, "anthropic-version": "2023-06-01"}
    return httpx.post(f"{fake.anthropic_base_url}/v1/messages", json=body, headers=headers)


def _chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages), **extra}


USER = {"role": "user", "content": "hi"}


def test_it_rejects_a_wrong_openai_key_like_openai(fake_model: FakeModelServer) -> None:
    """401 with `invalid_api_key` and a masked key; no key at all is a different 401."""
    response = _openai(fake_model, _chat(USER), key="sk-wrong-0123456789")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "invalid_api_key" and error["type"] == "invalid_request_error"
    assert "sk-wrong-0123456789" not in error["message"]
    bare = httpx.post(f"{fake_model.openai_base_url}/chat/completions", json=_chat(USER))
    assert (
        bare.status_code == 401 and "didn't provide an API key" in bare.json()["error"]["message"]
    )


def test_it_rejects_a_wrong_anthropic_key_like_anthropic(fake_model: FakeModelServer) -> None:
    """Anthropic's error envelope: type error, error.type authentication_error."""
    response = _anthropic(
        fake_model, {"model": "m", "max_tokens": 5, "messages": [USER]}, key="nope"
    )
    assert response.status_code == 401
    assert response.json() == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("{not json", "parse the JSON"),
        (_chat(), "empty array"),
        ({"messages": [USER]}, "model parameter"),
        (_chat(USER, stream=True), "streaming"),
        (
            _chat(USER, {"role": "tool", "tool_call_id": "call_1", "content": "x"}),
            "preceeding message",
        ),
        (
            _chat(
                USER,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
            ),
            "did not have response messages: c1",
        ),
        (
            _chat(USER, tools=[{"type": "function", "function": {"name": "bad name!"}}]),
            "does not match pattern",
        ),
        (_chat({"role": "wizard", "content": "x"}), "Supported values"),
    ],
)
def test_it_rejects_malformed_openai_requests(
    fake_model: FakeModelServer, body: Any, fragment: str
) -> None:
    """Each malformed chat request gets a 400 in OpenAI's error shape."""
    response = _openai(fake_model, body)
    assert response.status_code == 400
    assert fragment in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"model": "m", "messages": [USER]}, "max_tokens"),
        ({"model": "m", "max_tokens": 5, "messages": []}, "at least one message"),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    USER,
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
                    },
                ],
            },
            "unexpected `tool_use_id`",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    USER,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
                    },
                    {"role": "user", "content": "no result"},
                ],
            },
            "without `tool_result`",
        ),
    ],
)
def test_it_rejects_malformed_anthropic_requests(
    fake_model: FakeModelServer, body: Any, fragment: str
) -> None:
    """Each malformed messages request gets a 400 invalid_request_error."""
    response = _anthropic(fake_model, body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert fragment in response.json()["error"]["message"]


def test_it_answers_with_tool_calls_and_usage(fake_model: FakeModelServer) -> None:
    """A scripted tool call comes back in each protocol's own shape, with usage."""
    fake_model.add_script(Script("s", (calls(("read", {"path": "a.py"})),)), model="m")
    chat = _openai(fake_model, _chat(USER)).json()
    call = chat["choices"][0]["message"]["tool_calls"][0]
    assert chat["choices"][0]["finish_reason"] == "tool_calls"
    assert call["function"] == {"name": "read", "arguments": '{"path": "a.py"}'}
    assert (
        chat["usage"]["total_tokens"]
        == chat["usage"]["prompt_tokens"] + chat["usage"]["completion_tokens"]
    )

    message = _anthropic(fake_model, {"model": "m", "max_tokens": 5, "messages": [USER]}).json()
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0]["type"] == "tool_use" and message["content"][0]["input"] == {
        "path": "a.py"
    }
    assert message["usage"]["input_tokens"] > 0
    assert [r.status for r in fake_model.recorded()] == [200, 200]
    assert fake_model.recorded("openai")[0].json["messages"] == [USER]


def test_it_plays_turns_from_what_the_conversation_holds(fake_model: FakeModelServer) -> None:
    """The turn is the number of assistant messages; a turn can read the tool results."""

    def echo(conversation: Conversation) -> Reply:
        return text(f"turn {conversation.turn}: {conversation.last_results[0].content}")

    fake_model.add_script(Script("s", (calls(("read", {"grep": "x"})), echo)), model="m")
    first = _openai(fake_model, _chat(USER)).json()["choices"][0]["message"]
    second = _openai(
        fake_model,
        _chat(
            USER,
            first,
            {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": "a.py:1: x"},
        ),
    ).json()
    assert second["choices"][0]["message"]["content"] == "turn 1: a.py:1: x"


def test_it_routes_by_system_prompt_marker_before_model(fake_model: FakeModelServer) -> None:
    """A marker in the system prompt picks the script (e.g. the reviewer's name)."""
    fake_model.add_script(Script("by-model", (text("model script"),)), model="m")
    fake_model.add_script(
        Script("by-marker", (text("security script"),)), marker="reviewer: security"
    )
    plain = _openai(fake_model, _chat(USER)).json()
    marked = _openai(
        fake_model, _chat({"role": "system", "content": "reviewer: security"}, USER)
    ).json()
    assert plain["choices"][0]["message"]["content"] == "model script"
    assert marked["choices"][0]["message"]["content"] == "security script"
    assert [r.script for r in fake_model.recorded()] == ["by-model", "by-marker"]


def test_it_routes_by_a_marker_in_the_user_message_when_the_system_prompt_has_none(
    fake_model: FakeModelServer,
) -> None:
    """Reviewers share one system prompt and name themselves at the end of the user message:
    the marker is found there (in any content part); a system-prompt marker still wins."""
    fake_model.add_script(
        Script("by-role", (text("role script"),)), marker="You are the x reviewer."
    )
    fake_model.add_script(Script("by-system", (text("system script"),)), marker="critic")
    shared = {"type": "text", "text": "the diff"}
    role = {"type": "text", "text": "## Your role\n\nYou are the x reviewer."}
    by_role = _openai(
        fake_model,
        _chat({"role": "system", "content": "rules"}, {"role": "user", "content": [shared, role]}),
    ).json()
    by_system = _openai(
        fake_model,
        _chat({"role": "system", "content": "critic"}, {"role": "user", "content": [role]}),
    ).json()
    assert by_role["choices"][0]["message"]["content"] == "role script"
    assert by_system["choices"][0]["message"]["content"] == "system script"


def test_it_serves_slow_responses_concurrently(fake_model: FakeModelServer) -> None:
    """Latency is per request and requests overlap, as several reviewers' calls would (2 s
    each: 6 s in series, so the bound holds on a loaded machine too)."""
    fake_model.add_script(slow(2.0, then=prose_only()), model="m")
    started = time.monotonic()
    threads = [threading.Thread(target=_openai, args=(fake_model, _chat(USER))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    assert 2.0 <= elapsed < 4.5
    assert [r.status for r in fake_model.recorded()] == [200, 200, 200]


LONG = {"role": "system", "content": " ".join(f"rule {n}: read the diff." for n in range(400))}


def test_openai_usage_counts_the_prompt_and_caches_a_long_shared_prefix(
    fake_model: FakeModelServer,
) -> None:
    """prompt_tokens is the o200k count of what was received; a prompt of 1024 tokens or more
    that starts like an earlier one reads the common prefix, in steps of 128, from the cache."""
    tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    first = _openai(fake_model, _chat(LONG, USER, tools=tools)).json()["usage"]
    assert first["prompt_tokens"] > 1024
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    follow = {"role": "user", "content": "and the tests?"}
    second = _openai(fake_model, _chat(LONG, USER, follow, tools=tools)).json()["usage"]
    cached = second["prompt_tokens_details"]["cached_tokens"]
    assert cached % 128 == 0 and first["prompt_tokens"] - 128 < cached <= first["prompt_tokens"]
    assert second["prompt_tokens"] > first["prompt_tokens"]
    # A different start shares nothing; a short prompt is never cached.
    other = _openai(fake_model, _chat(USER, LONG, tools=tools)).json()["usage"]
    assert other["prompt_tokens_details"]["cached_tokens"] == 0
    _openai(fake_model, _chat(USER))
    short = _openai(fake_model, _chat(USER)).json()["usage"]
    assert short["prompt_tokens_details"]["cached_tokens"] == 0
    assert (
        fake_model.tokens_received
        == sum(u["prompt_tokens"] for u in (first, second, other, short)) + short["prompt_tokens"]
    )
    assert fake_model.tokens_cached == cached


def test_anthropic_caches_only_what_is_marked(fake_model: FakeModelServer) -> None:
    system = [{"type": "text", "text": LONG["content"], "cache_control": {"type": "ephemeral"}}]
    body = {"model": "m", "max_tokens": 5, "system": system, "messages": [USER]}
    written = _anthropic(fake_model, body).json()["usage"]
    assert written["cache_creation_input_tokens"] > 1024 and written["cache_read_input_tokens"] == 0
    read = _anthropic(fake_model, body).json()["usage"]
    assert read["cache_read_input_tokens"] == written["cache_creation_input_tokens"]
    assert read["input_tokens"] == written["input_tokens"] > 0
    plain = {**body, "system": LONG["content"]}
    for _ in range(2):
        usage = _anthropic(fake_model, plain).json()["usage"]
        assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0


def test_anthropic_reads_a_growing_conversation_up_to_twenty_blocks_back(
    fake_model: FakeModelServer,
) -> None:
    """A breakpoint on the last block of each turn: the next turn reads what the previous one
    wrote and writes only what it adds; a prefix more than 20 blocks before every breakpoint
    is not found, as on Anthropic."""
    mark = {"cache_control": {"type": "ephemeral"}}

    def block(text: str, marked: bool = False) -> dict[str, Any]:
        return {"type": "text", "text": text, **(mark if marked else {})}

    def body(*turns: str) -> dict[str, Any]:
        messages = [{"role": "user", "content": [block(LONG["content"])]}]
        for i, said in enumerate(turns):
            messages.append({"role": "assistant", "content": [block(f"noted {i}")]})
            messages.append({"role": "user", "content": [block(said)]})
        messages[-1]["content"][-1].update(mark)
        return {"model": "m", "max_tokens": 5, "messages": messages}

    first = _anthropic(fake_model, body()).json()["usage"]
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 1024
    second = _anthropic(fake_model, body("and this")).json()["usage"]
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert 0 < second["cache_creation_input_tokens"] < 100  # two short blocks
    # Eleven turns later (22 blocks), no boundary within 20 blocks of the mark was written.
    far = _anthropic(fake_model, body(*(f"more {i}" for i in range(12)))).json()["usage"]
    assert far["cache_read_input_tokens"] == 0


def test_on_a_bad_day_an_answer_has_no_usage() -> None:
    with FakeModelServer(omit_usage=True) as fake:
        answer_ = _openai(fake, _chat(USER)).json()
        assert "usage" not in answer_ and answer_["choices"][0]["message"]["content"]
        assert fake.tokens_received > 0  # it still counts what it received
