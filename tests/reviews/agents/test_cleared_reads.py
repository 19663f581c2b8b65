"""Which earlier file reads a request re-sends whole (reviews/agents/review_mode_guard.py cleared_reads)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from reviews.agents.review_mode_guard import READS_ALWAYS_KEPT, READS_KEPT_CHARS, cleared_reads


def _history(sizes: list[int]) -> list:
    """A run that read one file per turn, each result `size` characters long."""
    messages: list = [ModelRequest(parts=[UserPromptPart("review this")])]
    for i, size in enumerate(sizes):
        messages.append(
            ModelResponse(parts=[ToolCallPart("read", {"path": f"f{i}.py"}, tool_call_id=f"c{i}")])
        )
        messages.append(ModelRequest(parts=[ToolReturnPart("read", "x" * size, f"c{i}")]))
    return messages


def _reads(messages: list) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


@given(st.lists(st.integers(min_value=0, max_value=20_000), max_size=8))
def test_only_the_oldest_answered_reads_are_cleared_and_never_the_newest(sizes):
    messages = _history(sizes)
    out = _reads(cleared_reads(messages))
    original = _reads(messages)
    assert len(out) == len(original)
    kept = [a == b for a, b in zip(out, original, strict=True)]
    # The one the model has not answered yet, and the newest two before it, go out whole.
    assert all(kept[-(READS_ALWAYS_KEPT + 1) :])
    # What is cleared is a prefix of the reads: never a newer one before an older one.
    assert kept == sorted(kept)
    answered = sum(sizes[:-1]) if sizes else 0
    if answered <= READS_KEPT_CHARS:
        assert all(kept)
    for text, was in zip(out, original, strict=True):
        if text != was:
            assert text.startswith("[Cleared") and f"{len(was):,} characters" in text
    assert cleared_reads(messages) == cleared_reads(messages)  # the same history, the same bytes
