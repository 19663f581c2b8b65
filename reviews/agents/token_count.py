"""Counting tokens offline: OpenAI's o200k encoding, whose tables ship inside the bpe-openai
wheel (tiktoken would download them on first use, and these servers are offline).

Other providers tokenize differently, so a count here is an estimate for them: it is the
cross-check when a provider reports no usage, and what the benchmarks count with.
"""

from __future__ import annotations

from functools import cache
from typing import Any

ENCODING = "o200k_base"


@cache
def _encoding() -> Any:
    import bpe_openai  # loaded on first count: the tables take a moment and some memory

    return bpe_openai.get_encoding(ENCODING)


def encode(text: str) -> list[int]:
    """The o200k tokens of `text`, special-token lookalikes encoded as the plain text they are."""
    if not text:
        return []
    return list(_encoding().encode(text, disallowed_special=()))


def count_tokens(text: str) -> int:
    """Tokens in `text`, special-token lookalikes counted as the plain text they are."""
    return len(encode(text))


def token_ids(text: str) -> list[int]:
    """The o200k tokens of `text` (a benchmark compares two requests' common token prefix)."""
    return encode(text)


# The parts of a request body that are prompt: what a provider bills as input tokens.
PROMPT_KEYS = ("tools", "response_format", "system", "messages")


def request_tokens(body: bytes | str) -> int:
    """Our count of a chat request's prompt: its tools, answer format, system prompt and
    messages, each as the JSON sent (the model parameters and settings are not prompt). A
    provider counts with its own tokenizer and template, so this is an estimate for the runs
    whose provider reports no usage; the fake model server counts the same way."""
    import json

    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return count_tokens(text)
    parts = [data[key] for key in PROMPT_KEYS if key != "messages" and data.get(key) is not None]
    # A provider renders each message into its template on its own: count them one by one.
    messages = data.get("messages")
    parts += messages if isinstance(messages, list) else [messages] if messages else []
    return sum(count_tokens(json.dumps(part, ensure_ascii=False)) for part in parts)
