"""The offline token count: o200k's own figures, with no download."""

import json

from reviews.agents.token_count import count_tokens, request_tokens
from tests.fakes.model_server import _openai_prompt_tokens


def test_counts_as_o200k_does():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    # Code tokenizes denser than prose: a line of Python is several tokens, never one per char.
    line = "def total(items):\n    return sum(i.price for i in items)\n"
    assert 8 < count_tokens(line) < len(line)


def test_special_token_text_is_counted_as_text():
    # PR text may contain "<|endoftext|>": it is counted, never refused or treated as special.
    assert count_tokens("a <|endoftext|> b") > 3


def test_a_request_is_counted_as_the_provider_counts_it():
    """Our count of a request the provider never answered (a stopped call) stands in for the
    provider's in the ledger: messages are counted one by one, as OpenAI templates them, not
    as one JSON array."""
    body = {
        "model": "m",
        "tools": [{"type": "function", "function": {"name": "record", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "Review the change."},
            {"role": "user", "content": "diff --git a/x.py b/x.py\n+print(1)\n"},
            {"role": "assistant", "content": "", "tool_calls": []},
        ],
    }
    assert request_tokens(json.dumps(body)) == len(_openai_prompt_tokens(body))
