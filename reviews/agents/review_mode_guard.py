"""Review mode inside pydantic-ai, and what each request re-sends. `ReviewModeGuard` is the
agent capability that counts calls to tools outside the mode's allowlist and rewrites
pydantic-ai's "Unknown tool name" answer into the mode's refusal, counts calls whose arguments
never validated, records usage as responses arrive, tells the last turn of the budget to close
(`last_turn_note`) and shortens the history (`cleared_reads`). Apart from the runtime adapter,
which builds and runs the agent around it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

from reviews.agents.mode import ReviewMode, refusal_message
from reviews.agents.model_run_types import (
    ANSWER_TOOL,
    Answer,
)
from reviews.agents.token_count import count_tokens, request_tokens
from reviews.domain.tool_schemas import compact_schema, strict_compatible


@dataclass
class ReviewModeGuard(AbstractCapability[Any]):
    """Counts calls to non-allowlisted tools and answers them with the mode's refusal."""

    mode: ReviewMode = field(default_factory=ReviewMode)
    # Calls whose arguments pydantic-ai rejected before any tool ran (broken JSON, wrong types):
    # counted like malformed payloads the tools themselves reject (the round's statistics).
    malformed: Counter[str] = field(default_factory=Counter)
    _seen: set[str] = field(default_factory=set)
    # Usage as the responses arrive: what a run that ends in an abstention still cost.
    usage: Counter[str] = field(default_factory=Counter)
    # The last request body sent (the HTTP client's hook keeps it): counted only when its
    # response carries no usage, so a provider that reports usage costs no counting.
    sent: bytes = b""
    unanswered: bool = False  # a request went out and its answer has not come back
    answer: Answer | None = None  # the shape the run ends with, if any
    turn_budget: int | None = None  # model calls the run may make (None: the config's limit)

    async def prepare_tools(
        self, ctx: Any, tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        return [_shown(tool) for tool in tool_defs]

    async def prepare_output_tools(
        self, ctx: Any, tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        # The answer's own description, without the docstring pydantic-ai appends to it.
        answer = self.answer
        if answer is None:
            return [_shown(tool) for tool in tool_defs]
        return [
            _shown(
                replace(tool, description=answer.description)
                if answer.shown is None
                else replace(
                    tool,
                    description=answer.description,
                    parameters_json_schema=dict(answer.shown),
                    strict=False,
                )
            )
            for tool in tool_defs
        ]

    async def keep_sent(self, request: httpx.Request) -> None:
        self.unanswered = True
        try:
            self.sent = request.content
        except httpx.RequestNotRead:  # a streamed body: nothing to count
            self.sent = b""

    def count_unanswered(self) -> None:
        """A run stopped while a request was out: the provider has it and bills its input, so
        it counts as a call (its input counted here, nothing of an answer)."""
        if self.unanswered:
            self.unanswered = False
            self.usage["input"] += request_tokens(self.sent)
            self.usage["local"] += 1
            self.usage["requests"] += 1

    async def after_model_request(
        self, ctx: Any, *, request_context: Any, response: ModelResponse
    ) -> ModelResponse:
        self.unanswered = False
        reported = response.usage
        if reported.input_tokens or reported.output_tokens:
            self.usage["input"] += reported.input_tokens
            self.usage["cached"] += reported.cache_read_tokens
            self.usage["output"] += reported.output_tokens
        else:  # the provider said nothing: count what was sent and what came back
            self.usage["input"] += request_tokens(self.sent)
            self.usage["output"] += response_tokens(response)
            self.usage["local"] += 1
        self.usage["requests"] += 1
        for part in response.parts:
            if isinstance(part, ToolCallPart) and not self.mode.allows(part.tool_name):
                self.mode.refuse(part.tool_name)
        return response

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        self._count_malformed(ctx.messages)
        # pydantic-ai has already answered the forbidden call with "Unknown tool name ...";
        # replace that answer in the history (so later requests agree) and in this request.
        history = [self._rewrite(message) for message in ctx.messages]
        if any(new is not old for new, old in zip(history, ctx.messages, strict=True)):
            ctx.messages[:] = history
            request_context.messages = [self._rewrite(m) for m in request_context.messages]
        request_context.messages = cleared_reads(request_context.messages)
        if self.turn_budget is not None and self.usage["requests"] + 1 == self.turn_budget:
            # The last turn the budget pays for: said in this request only, at its end (the
            # history and its cached prefix stay as they were).
            last = request_context.messages[-1]
            if isinstance(last, ModelRequest):
                note = UserPromptPart(last_turn_note(self.turn_budget))
                request_context.messages = [
                    *request_context.messages[:-1],
                    replace(last, parts=[*last.parts, note]),
                ]
        return request_context

    def _count_malformed(self, messages: list[Any]) -> None:
        for message in messages:
            if not isinstance(message, ModelRequest):
                continue
            for part in message.parts:
                if (
                    isinstance(part, ToolReturnPart)
                    and part.outcome == "retried"
                    and part.retry is not None
                    and part.retry.cause == "validation_error"
                    and part.tool_call_id not in self._seen
                ):
                    self._seen.add(part.tool_call_id)
                    self.malformed[part.tool_name] += 1

    def _rewrite(self, message: Any) -> Any:
        if not isinstance(message, ModelRequest):
            return message
        parts = [self._refusal_for(part) for part in message.parts]
        if all(new is old for new, old in zip(parts, message.parts, strict=True)):
            return message
        return replace(message, parts=parts)

    def _refusal_for(self, part: Any) -> Any:
        if (
            isinstance(part, ToolReturnPart)
            and part.outcome == "retried"
            and part.retry is not None
            and part.retry.cause == "unknown_tool"
            and not self.mode.allows(part.tool_name)
        ):
            # `failed`, not `retried`: the call is over, and the model should adapt, not retry.
            return replace(
                part, content=refusal_message(part.tool_name), outcome="failed", retry=None
            )
        return part


# What a run's earlier file reads may weigh in a request before the oldest are cleared; the
# newest are always sent whole. Each turn re-sends the whole history, so a run that reads five
# long files would otherwise pay for every one of them on every later turn.
READS_KEPT_CHARS = 24_000  # about 6,000 tokens
READS_ALWAYS_KEPT = 2


def cleared_reads(messages: list[Any]) -> list[Any]:
    """`messages` with the oldest `read` results replaced by a one-line note, when the reads the
    model has already answered (every request but the last) exceed `READS_KEPT_CHARS`; the
    newest `READS_ALWAYS_KEPT` stay whole. The same history always clears the same results, so
    consecutive requests still share their prefix up to the first newly cleared one."""
    reads: list[tuple[int, int, ToolReturnPart[Any]]] = [
        (i, j, part)
        for i, message in enumerate(messages[:-1])
        if isinstance(message, ModelRequest)
        for j, part in enumerate(message.parts)
        if isinstance(part, ToolReturnPart) and part.tool_name == "read"
    ]
    weight = sum(len(part.model_response_str()) for _, _, part in reads)
    if weight <= READS_KEPT_CHARS:
        return messages
    calls = {
        part.tool_call_id: part.args_as_json_str()
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }
    cleared: dict[tuple[int, int], ToolReturnPart[Any]] = {}
    for i, j, part in reads[: max(len(reads) - READS_ALWAYS_KEPT, 0)]:
        if weight <= READS_KEPT_CHARS:
            break
        text = part.model_response_str()
        weight -= len(text)
        note = (
            f"[Cleared to keep the conversation short: the result of read "
            f"{calls.get(part.tool_call_id, '')}, {len(text):,} characters, which you have seen. "
            "Call read again if you need it.]"
        )
        cleared[(i, j)] = replace(part, content=note)
    if not cleared:
        return messages
    return [
        replace(message, parts=[cleared.get((i, j), part) for j, part in enumerate(message.parts)])
        if any(key[0] == i for key in cleared)
        else message
        for i, message in enumerate(messages)
    ]


def last_turn_note(budget: int) -> str:
    return (
        f"This is your last turn ({budget} is this review's turn budget): record what remains "
        f"and call {ANSWER_TOOL} in this same reply."
    )


def _shown(tool: ToolDefinition) -> ToolDefinition:
    # Every call of a round sends the schemas: the model sees their compact form, and the
    # tool's validator still checks the arguments against the full one.
    shown = compact_schema(tool.parameters_json_schema)
    # Strict mode only where the provider could apply it: elsewhere it would add
    # `additionalProperties` to every object of the schema, for nothing.
    strict = tool.strict if tool.strict is not None or strict_compatible(shown) else False
    return replace(tool, parameters_json_schema=shown, strict=strict)


def response_tokens(response: ModelResponse) -> int:
    """Our count of a reply's text and tool calls, for a response that carried no usage."""
    parts: list[str] = []
    for part in response.parts:
        if isinstance(part, ToolCallPart):
            parts.append(part.tool_name)
            parts.append(part.args_as_json_str())
        else:
            parts.append(str(getattr(part, "content", "")))
    return count_tokens("\n".join(parts))
