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


def count_tokens(text: str) -> int:
    """Tokens in `text`, special-token lookalikes counted as the plain text they are."""
    return len(token_ids(text))


def token_ids(text: str) -> list[int]:
    """The o200k tokens of `text` (a benchmark compares two requests' common token prefix)."""
    if not text:
        return []
    return list(_encoding().encode(text, disallowed_special=()))
