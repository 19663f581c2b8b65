"""The model runtime adapter: one class, `ModelRuntime`, for the model provider.

It builds a pydantic-ai `Agent` for one reviewer run from a plain `ModelConfig` (provider
`openai` for any OpenAI-compatible server, or `anthropic`), registers the
review-mode tools whose implementations the caller injects (so the Django layer records nodes
through its services), runs it and returns the final text with the token usage.

Rules it enforces:
- The API key is an argument of `run`, used for that run's client and dropped with it: it is
  never kept on the runtime, the config, or the result.
- Every prompt and every tool result is passed through `redact` before it can reach the provider.
- Review mode: only allowlisted tools are registered. pydantic-ai answers a call to any other
  name with its own "Unknown tool name" retry; `_ReviewModeGuard` counts each such call (after
  the model response) and rewrites that answer into the mode's refusal message (before the next
  request), so the model is told this is review mode and to leave action to people. Unknown
  names share the agent's default tool-retry budget (`REFUSALS_PER_TOOL`): a model that calls
  the same forbidden tool more often than that ends the run with a non-retryable error.
  Calls whose arguments pydantic-ai itself rejects (broken JSON) never reach a tool; the guard
  counts them in `RunOutcome.malformed_calls` for the round's statistics.
- A run that must answer in a shape (`Answer`, e.g. a lens's verdict) ends with a call to the
  `final_answer` tool; JSON written in prose is read as well. A reply that does not validate is
  sent back once with the validation error (pydantic-ai's output retry); a second bad reply ends
  the run with `RunOutcome.answer` None and `answer_error` saying why: an abstention, with the
  findings the tools recorded kept. Tools called alongside the answer still run ("exhaustive").
- Prompt caching: a run's `shared_prompt` (what every run of a stage sends alike) goes before
  its own `user_prompt`. OpenAI caches a repeated prefix by itself; on Anthropic the tools, the
  system prompt and the shared prompt carry cache marks, and so does the last block of each
  request (a run's later turns read their history from the cache).
- History: each turn re-sends the conversation. Once the file reads the model has already
  answered weigh more than `READS_KEPT_CHARS`, the oldest go out as a one-line note saying
  what was read (`cleared_reads`); the newest two are always whole.
- A turn budget (`run(turn_budget=…)`): the last call the budget pays for is told to close;
  a run that does not close within it is an abstention, its recorded findings kept.
- Errors are raised as `ModelRunError` with `retryable` set: timeouts, connection errors, 429
  and 5xx can succeed on a retry; 401/403, an unknown model, a rejected request, an exhausted
  budget or a misbehaving model cannot. SDK-level retries are off (`max_retries=0`): the
  pipeline owns retrying (it retries a failed reviewer once), and hidden retries would
  multiply latency and cost.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import ssl
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ValidationError
from pydantic_ai import Agent, ModelRetry, RunContext, TextOutput, Tool, ToolOutput
from pydantic_ai._function_schema import FunctionSchema
from pydantic_ai.capabilities import AbstractCapability, UseThreadExecutor
from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelRequestTimeout,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    ToolFailed,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    CachePoint,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import UsageLimits

from reviews.agents.codetools import CodeTools
from reviews.agents.mode import ReviewMode, refusal_message
from reviews.agents.redaction import redact
from reviews.agents.token_count import count_tokens, request_tokens
from reviews.domain.model_answers import json_in_prose
from reviews.domain.nodes import node_tool_schema
from reviews.domain.tool_schemas import compact_schema, strict_compatible

logger = logging.getLogger(__name__)

ProviderName = Literal["openai", "anthropic"]

PROVIDERS: tuple[str, ...] = ("openai", "anthropic")
TOOL_RETRIES = 3  # validation retries per registered tool (bad arguments from the model)
REFUSALS_PER_TOOL = 5  # calls of one forbidden name answered with the refusal before giving up
# An invalid payload records nothing; the tool's reply says why.
_NODE_TOOL_DESCRIPTION = "Record one finding."


def provider_name(value: str) -> ProviderName | None:
    """`value` as a provider Quorum can call, or None (unset or unknown)."""
    match value:
        case "openai" | "anthropic":
            return value
        case _:
            return None


# -- configuration and results -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """Where and how to call a model. Holds no secret: the API key is passed to `run`."""

    provider: ProviderName
    model: str
    base_url: str | None = None  # OpenAI: ".../v1"; Anthropic: the host, the SDK adds /v1/messages
    timeout: float = 120.0  # seconds for one model call
    max_output_tokens: int | None = 8_192  # per response (Anthropic requires a value)
    total_tokens_limit: int | None = 400_000  # the run's token budget
    request_limit: int = 40  # model calls per run
    tool_calls_limit: int | None = 200

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"provider must be one of {PROVIDERS}, got {self.provider!r}")
        if not self.model.strip():
            raise ValueError("model must be named")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")

    def usage_limits(self) -> UsageLimits:
        return UsageLimits(
            request_limit=self.request_limit,
            total_tokens_limit=self.total_tokens_limit,
            tool_calls_limit=self.tool_calls_limit,
        )

    def model_settings(self) -> ModelSettings:
        settings = ModelSettings(timeout=self.timeout, max_retries=0)
        if self.provider == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModelSettings

            # Anthropic caches a prefix only up to a marked block: mark the tools and the system
            # prompt (the same for every run of a stage); the run's shared user content carries
            # its own mark (`CachePoint`, see `ModelRuntime.run`); and the last block of each
            # request, so a run's next turn reads its history from the cache and pays only for
            # what it adds (four marks: Anthropic's limit). OpenAI caches unasked.
            settings = AnthropicModelSettings(
                timeout=self.timeout,
                max_retries=0,
                anthropic_cache_tool_definitions=True,
                anthropic_cache_instructions=True,
                anthropic_cache_messages=True,
            )
        if self.max_output_tokens is not None:
            settings["max_tokens"] = self.max_output_tokens
        return settings


ToolImpl = Callable[..., object]
ANSWER_TOOL = "final_answer"


@dataclass(frozen=True)
class Answer:
    """The shape a run must end with. `from_prose` turns an answer without JSON into one (a
    reviewer's closing paragraph); without it such an answer is sent back once."""

    schema: type[BaseModel]
    description: str
    from_prose: Callable[[str], BaseModel] | None = None
    # The JSON schema the model is shown, when not `schema`'s own (runs of a stage that answer
    # in different shapes show one, so their requests share a prefix). It is sent without
    # strict mode, so fields it does not name reach `schema`, which validates them.
    shown: Mapping[str, Any] | None = None


@dataclass(kw_only=True)
class ReviewTools:
    """The review-mode tool implementations for one run; a None tool is not offered.

    Node, comment and ticket tools are the caller's (they write through services, as the
    reviewer's own stream); the code tools read the space's worktree. Implementations return a
    string or a JSON-serialisable value, which is redacted before the model sees it.

    pydantic-ai calls these synchronous functions from a worker thread. The writing tools are
    registered `sequential`, so they run one at a time in the order the model called them (node
    ids follow the model's order, and two writes of one run never race each other).

    - add_review_node(payload: dict) — the raw tool arguments; validate with parse_node_payload
    - confirm_review_node(node_id: str, reasoning: str | None)
    - list_review_nodes()
    - add_comment(body: str, path: str | None, line: int | None)
    - create_ticket(title: str, body: str)
    The model is offered the last two as one tool, `add_note`, its `kind` saying which.
    """

    add_review_node: ToolImpl | None = None
    confirm_review_node: ToolImpl | None = None
    list_review_nodes: ToolImpl | None = None
    add_comment: ToolImpl | None = None
    create_ticket: ToolImpl | None = None
    code: CodeTools | None = None
    # get_diff is left out when the whole diff is already in the prompt.
    diff_tool: bool = True


@dataclass(frozen=True)
class RunUsageSummary:
    """What a run spent, summed over its responses as they arrived (so a run that failed or
    abstained still says what it cost). `input_tokens` includes `cached_input_tokens`.
    `counted_locally`: at least one response carried no usage, and its figures are our o200k
    count of the request body sent and of the reply (reviews/agents/token_count.py)."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    tool_calls: int = 0
    cached_input_tokens: int = 0
    counted_locally: bool = False

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class RunOutcome:
    output: str  # the model's final text
    usage: RunUsageSummary
    refused_calls: int  # calls to tools outside the review-mode allowlist
    refused_by_tool: dict[str, int] = field(default_factory=dict)
    redactions: int = 0  # secrets replaced in prompts and tool results
    tool_errors: int = 0  # injected tool implementations that raised
    # Calls rejected by argument validation before reaching the tool (e.g. broken JSON).
    malformed_calls: dict[str, int] = field(default_factory=dict)
    answer: BaseModel | None = None  # the validated answer, when the run asked for one
    answer_error: str = ""  # why there is none: the model's last reply did not validate


class ModelRunError(Exception):
    """A reviewer run failed. `retryable` says whether running it again can help."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        kind: str,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.kind = kind  # auth, not_found, quota, rate_limited, timeout, connection, …
        self.status = status  # the provider's HTTP status, when there was one
        # What the run spent before it failed (set by `ModelRuntime.run`).
        self.usage: RunUsageSummary = RunUsageSummary()


class RetryableModelError(ModelRunError):
    def __init__(self, message: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(message, retryable=True, kind=kind, status=status)


class PermanentModelError(ModelRunError):
    def __init__(self, message: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(message, retryable=False, kind=kind, status=status)


def classify_error(exc: BaseException) -> ModelRunError:
    """Map a pydantic-ai / SDK failure to a `ModelRunError` that says whether a retry helps."""
    status = getattr(exc, "status_code", None)
    model = getattr(exc, "model_name", "") or ""
    where = f" ({model})" if model else ""
    # Order matters: the specific categories are subclasses of the generic ones.
    if isinstance(exc, ModelAuthenticationError) or status in (401, 403):
        return PermanentModelError(
            f"the provider refused the API key{where}", kind="auth", status=status
        )
    if isinstance(exc, ModelNotFoundError) or status == 404:
        return PermanentModelError(f"unknown model{where}", kind="not_found", status=status)
    if isinstance(exc, ModelQuotaExceededError):
        return PermanentModelError(f"provider quota exhausted{where}", kind="quota", status=status)
    if isinstance(exc, ModelRateLimitError) or status == 429:
        return RetryableModelError(f"rate limited{where}", kind="rate_limited", status=status)
    if isinstance(exc, ModelRequestTimeout | ModelTimeoutError | TimeoutError):
        return RetryableModelError(f"the model call timed out{where}", kind="timeout")
    if isinstance(exc, ModelConnectionError):
        return RetryableModelError(f"could not reach the provider{where}: {exc}", kind="connection")
    if isinstance(exc, ModelServerError | ModelUnavailableError) or (
        isinstance(status, int) and status >= 500
    ):
        return RetryableModelError(f"provider error{where}", kind="server_error", status=status)
    if isinstance(status, int) and status in (408, 409):
        return RetryableModelError(f"provider asked to retry{where}", kind="retry", status=status)
    if isinstance(exc, ModelRequestRejectedError | ModelHTTPError):
        return PermanentModelError(
            f"the provider rejected the request{where}: {exc}", kind="bad_request", status=status
        )
    if isinstance(exc, ModelAPIError):
        return RetryableModelError(f"provider API error{where}: {exc}", kind="api_error")
    if isinstance(exc, UsageLimitExceeded):
        return PermanentModelError(f"token or request budget exhausted: {exc}", kind="budget")
    if isinstance(exc, UnexpectedModelBehavior):
        return PermanentModelError(f"the model misbehaved: {exc}", kind="model_behaviour")
    if isinstance(exc, AgentRunError):
        return PermanentModelError(f"the run failed: {exc}", kind="run_error")
    return PermanentModelError(f"unexpected error: {type(exc).__name__}: {exc}", kind="internal")


# -- review mode inside pydantic-ai -------------------------------------------------------------


@dataclass
class _ReviewModeGuard(AbstractCapability[Any]):
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
        try:
            self.sent = request.content
        except httpx.RequestNotRead:  # a streamed body: nothing to count
            self.sent = b""

    async def after_model_request(
        self, ctx: Any, *, request_context: Any, response: ModelResponse
    ) -> ModelResponse:
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


# -- the adapter -------------------------------------------------------------------------------


@dataclass
class _RunState:
    redactions: int = 0
    tool_errors: int = 0
    # Code tools may run in parallel worker threads; the counters are shared.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, *, redactions: int = 0, tool_errors: int = 0) -> None:
        with self._lock:
            self.redactions += redactions
            self.tool_errors += tool_errors

    def deliver(self, value: object) -> str:
        """A tool result as text for the model, with secrets redacted."""
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        clean, count = redact(text)
        self.count(redactions=count)
        return clean


@dataclass
class ReviewerAgent:
    """A built agent with the per-run pieces it needs (and the client to close after)."""

    agent: Agent[None, Any]
    mode: ReviewMode
    state: _RunState
    guard: _ReviewModeGuard
    _client: Any = field(repr=False)

    async def aclose(self) -> None:
        await self._client.close()


def _spent(guard: _ReviewModeGuard, *, tool_calls: int = 0) -> RunUsageSummary:
    seen = guard.usage
    return RunUsageSummary(
        input_tokens=seen["input"],
        cached_input_tokens=seen["cached"],
        output_tokens=seen["output"],
        requests=seen["requests"],
        tool_calls=tool_calls,
        counted_locally=seen["local"] > 0,
    )


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


def _hooks(on_request: Any) -> dict[str, list[Any]]:
    return {"request": [on_request]} if on_request is not None else {}


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every model client of the process. Building one reads the CA bundle
    (about 30 ms of CPU), and a round builds a client per run: a reviewer, each lens. The
    context holds no connection, so clients on different event loops share it safely."""
    return httpx.create_ssl_context()


class ModelRuntime:
    """Runs reviewer agents against one configured provider and model."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config

    # -- building ----------------------------------------------------------------------------

    def build_agent(
        self,
        *,
        api_key: str,
        tools: ReviewTools,
        system_prompt: str,
        mode: ReviewMode | None = None,
        name: str | None = None,
        executor: Executor | None = None,
        answer: Answer | None = None,
    ) -> ReviewerAgent:
        """An agent with the review-mode tools registered; close it with `aclose()`.

        pydantic-ai calls synchronous tools in worker threads (a new one per call by default).
        Pass `executor` (e.g. a one-worker ThreadPoolExecutor) to run them on threads you own,
        such as a thread whose database connection you close when the run ends.
        """
        mode = mode or ReviewMode()
        state = _RunState()
        guard = _ReviewModeGuard(mode=mode, answer=answer)
        model, client = self._model(api_key, on_request=guard.keep_sent)
        clean_system, count = redact(system_prompt)
        state.count(redactions=count)
        agent: Agent[None, Any] = Agent(
            model,
            name=name,
            system_prompt=clean_system,
            tools=_tools(tools, mode, state),
            output_type=_output_type(answer) if answer is not None else str,
            end_strategy="exhaustive",
            model_settings=self.config.model_settings(),
            retries={"tools": REFUSALS_PER_TOOL, "output": 1},
            capabilities=[guard] if executor is None else [guard, UseThreadExecutor(executor)],
        )
        return ReviewerAgent(agent=agent, mode=mode, state=state, guard=guard, _client=client)

    def _model(self, api_key: str, *, on_request: Any = None) -> tuple[Any, Any]:
        if not api_key:
            raise PermanentModelError("no API key configured for the model", kind="auth")
        config = self.config
        if config.provider == "openai":
            from openai import AsyncOpenAI, DefaultAsyncHttpxClient
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            client = AsyncOpenAI(
                api_key=api_key,
                base_url=config.base_url,
                max_retries=0,
                timeout=config.timeout,
                http_client=DefaultAsyncHttpxClient(
                    verify=_tls_context(), event_hooks=_hooks(on_request)
                ),
            )
            return OpenAIChatModel(
                config.model, provider=OpenAIProvider(openai_client=client)
            ), client
        from anthropic import AsyncAnthropic
        from anthropic import DefaultAsyncHttpxClient as AnthropicHttpxClient
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        anthropic_client = AsyncAnthropic(
            api_key=api_key,
            base_url=config.base_url,
            max_retries=0,
            timeout=config.timeout,
            http_client=AnthropicHttpxClient(verify=_tls_context(), event_hooks=_hooks(on_request)),
        )
        return AnthropicModel(
            config.model, provider=AnthropicProvider(anthropic_client=anthropic_client)
        ), anthropic_client

    # -- running -----------------------------------------------------------------------------

    async def run(
        self,
        *,
        api_key: str,
        system_prompt: str,
        user_prompt: str,
        tools: ReviewTools,
        mode: ReviewMode | None = None,
        name: str | None = None,
        executor: Executor | None = None,
        answer: Answer | None = None,
        shared_prompt: str = "",
        turn_budget: int | None = None,
    ) -> RunOutcome:
        """One reviewer run. `shared_prompt` is user content every run of the stage shares (the
        change, the diff): it goes first, `user_prompt` (this run's own brief) after it, so
        the runs' requests share one prefix a provider caches. Raises `ModelRunError` (see
        `retryable`) when it cannot finish; with `answer`, a reply that never validated is an
        abstention, not an error, and so is a run that used its `turn_budget` (model calls;
        its last request says it is the last) without answering: what it recorded stands."""
        built = self.build_agent(
            api_key=api_key,
            tools=tools,
            system_prompt=system_prompt,
            mode=mode,
            name=name,
            executor=executor,
            answer=answer,
        )
        clean_user, count = redact(user_prompt)
        built.state.count(redactions=count)
        prompt: str | list[str | CachePoint] = clean_user
        if shared_prompt:
            clean_shared, count = redact(shared_prompt)
            built.state.count(redactions=count)
            # The cache mark ends the shared prefix (Anthropic; other providers drop it).
            prompt = [clean_shared, CachePoint(), clean_user]
        answer_error = ""
        limits = self.config.usage_limits()
        if turn_budget is not None and answer is not None:
            built.guard.turn_budget = turn_budget
            limits = replace(limits, request_limit=min(turn_budget, self.config.request_limit))
        try:
            result = await built.agent.run(prompt, usage_limits=limits)
        except UsageLimitExceeded as exc:
            spent_turns = built.guard.usage["requests"]
            if built.guard.turn_budget is None or spent_turns < built.guard.turn_budget:
                error = self._failed(exc)
                error.usage = _spent(built.guard)
                raise error from exc
            result = None
            answer_error = f"its turn budget ({spent_turns} model calls) ran out before it closed"
        except UnexpectedModelBehavior as exc:
            if answer is None or not str(exc).startswith("Exceeded maximum output retries"):
                error = self._failed(exc)
                error.usage = _spent(built.guard)
                raise error from exc
            result, answer_error = None, _answer_error(exc)
        except Exception as exc:
            error = self._failed(exc)
            error.usage = _spent(built.guard)
            raise error from exc
        finally:
            await built.aclose()
        output: Any = result.output if result is not None else None
        structured = output if isinstance(output, BaseModel) else None
        usage = _spent(built.guard, tool_calls=result.usage.tool_calls if result else 0)
        return RunOutcome(
            output=structured.model_dump_json() if structured is not None else (output or ""),
            answer=structured,
            answer_error=answer_error,
            usage=usage,
            refused_calls=built.mode.refused_calls,
            refused_by_tool=built.mode.refused_by_tool,
            redactions=built.state.redactions,
            tool_errors=built.state.tool_errors,
            malformed_calls=dict(built.guard.malformed),
        )

    @staticmethod
    def _failed(exc: BaseException) -> ModelRunError:
        error = classify_error(exc)
        logger.warning("reviewer run failed: %s (retryable=%s)", error, error.retryable)
        return error

    def run_sync(
        self,
        *,
        api_key: str,
        system_prompt: str,
        user_prompt: str,
        tools: ReviewTools,
        mode: ReviewMode | None = None,
        name: str | None = None,
        executor: Executor | None = None,
        answer: Answer | None = None,
        shared_prompt: str = "",
        turn_budget: int | None = None,
    ) -> RunOutcome:
        """`run` for synchronous callers (Celery tasks); not for use inside an event loop."""
        return asyncio.run(
            self.run(
                api_key=api_key,
                system_prompt=system_prompt,
                user_prompt=user_prompt,
                tools=tools,
                mode=mode,
                name=name,
                executor=executor,
                answer=answer,
                shared_prompt=shared_prompt,
                turn_budget=turn_budget,
            )
        )


# -- answers in a shape ------------------------------------------------------------------------


def _output_type(answer: Answer) -> list[Any]:
    """The answer as the `final_answer` tool, or as JSON (or prose) in the final text."""
    schema = answer.schema

    def from_text(ctx: RunContext[None], text: str) -> BaseModel:
        found = json_in_prose(text)
        if found is None:
            if answer.from_prose is not None:
                return answer.from_prose(text)
            raise ModelRetry(
                f"Give your answer by calling {ANSWER_TOOL} with the fields its schema names."
            )
        try:
            return schema.model_validate(found)
        except ValidationError as exc:
            raise ModelRetry(_validation_text(exc)) from None

    return [
        # pydantic-ai appends the schema's docstring after a full stop of its own.
        ToolOutput(schema, name=ANSWER_TOOL, description=answer.description.rstrip(". ")),
        TextOutput(from_text),
    ]


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in exc.errors()
    )


def _validation_text(exc: ValidationError) -> str:
    return f"Your answer did not match the schema ({_problems(exc)}). Answer again, corrected."


def _answer_error(exc: BaseException) -> str:
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        detail = _problems(cause)
    else:
        detail = " ".join(str(cause or "").split())
    return f"no valid answer after a retry{': ' + detail[:300] if detail else ''}"


# -- tool registration -------------------------------------------------------------------------


def _guarded(state: _RunState, name: str, call: Callable[[], object]) -> str:
    try:
        return state.deliver(call())
    except ToolFailed:
        raise
    except Exception as exc:
        # A bug in an injected implementation must not end the review; the model is told the
        # tool failed and the count goes into the outcome (and the log, for the operator).
        state.count(tool_errors=1)
        logger.exception("review tool %s failed", name)
        raise ToolFailed(f"{name} failed on the server ({type(exc).__name__}); continue") from exc


_SCHEMAS: dict[str, FunctionSchema] = {}


def _tool(function: Callable[..., str], **options: Any) -> Tool[Any]:
    """A tool for one run. Its schema (validator and JSON schema, from the signature and the
    docstring, the same in every run) is built once per process: building it is most of the
    cost of an agent, and a round builds one per reviewer turn and per lens. The run's own
    function (closing over its state) is what the tool calls."""
    key = function.__qualname__
    schema = _SCHEMAS.get(key)
    if schema is None:
        tool = Tool(function, **options)
        _SCHEMAS.setdefault(key, tool.function_schema)
        return tool
    return Tool(function, function_schema=replace(schema, function=function), **options)


def _tools(tools: ReviewTools, mode: ReviewMode, state: _RunState) -> list[Tool[Any]]:
    registered: list[Tool[Any]] = []

    def add(name: str, tool: Tool[Any]) -> None:
        if mode.allows(name):  # a narrower mode simply does not offer the tool
            registered.append(tool)

    if tools.add_review_node is not None:
        record = tools.add_review_node

        def add_review_node(**payload: Any) -> str:
            return _guarded(state, "add_review_node", lambda: record(payload))

        # The schema comes from the domain (`reasoning` first) and is not enforced by
        # pydantic-ai, so a malformed payload reaches the implementation, which rejects it with
        # a reason instead of the framework burning the tool's retry budget.
        node_tool = Tool.from_schema(
            add_review_node,
            "add_review_node",
            _NODE_TOOL_DESCRIPTION,
            node_tool_schema(),
            sequential=True,
        )
        node_tool.max_retries = TOOL_RETRIES
        add("add_review_node", node_tool)

    if tools.confirm_review_node is not None:
        confirm = tools.confirm_review_node

        def confirm_review_node(node_id: str, reasoning: str | None = None) -> str:
            """Confirm a peer reviewer's finding after checking it yourself. You cannot confirm
            your own findings.

            Args:
                node_id: The id of the finding, from list_review_nodes.
                reasoning: Why you agree the finding is real.
            """
            return _guarded(
                state,
                "confirm_review_node",
                lambda: confirm(node_id=node_id, reasoning=reasoning),
            )

        add(
            "confirm_review_node",
            _tool(confirm_review_node, max_retries=TOOL_RETRIES, sequential=True),
        )

    if tools.list_review_nodes is not None:
        listing = tools.list_review_nodes

        def list_review_nodes() -> str:
            """List the findings recorded so far in this review, with their ids and status."""
            return _guarded(state, "list_review_nodes", listing)

        add(
            "list_review_nodes", _tool(list_review_nodes, max_retries=TOOL_RETRIES, sequential=True)
        )

    if tools.add_comment is not None or tools.create_ticket is not None:
        comment, ticket = tools.add_comment, tools.create_ticket

        # Comments and tickets are one tool: two schemas with every reviewer call cost twice
        # what one with a `kind` does, and a model tells the two apart by it as well.
        def add_note(
            kind: Literal["comment", "ticket"],
            body: str,
            title: str | None = None,
            path: str | None = None,
            line: int | None = None,
        ) -> str:
            """Not a finding: a comment (on a line if given), or a titled ticket for later work."""
            if kind == "ticket":
                if ticket is None:
                    raise ModelRetry("Tickets are not available in this run.")
                if not (title or "").strip():
                    raise ModelRetry("A ticket needs a title.")
                return _guarded(state, "add_note", lambda: ticket(title=title, body=body))
            if comment is None:
                raise ModelRetry("Comments are not available in this run.")
            return _guarded(state, "add_note", lambda: comment(body=body, path=path, line=line))

        add("add_note", _tool(add_note, max_retries=TOOL_RETRIES, sequential=True))

    if tools.code is not None:
        registered.extend(_code_tools(tools.code, mode, state, diff_tool=tools.diff_tool))
    return registered


def _code_tools(
    code: CodeTools, mode: ReviewMode, state: _RunState, *, diff_tool: bool = True
) -> list[Tool[Any]]:
    # One tool for the three ways of reading (`CodeTools.read`): one schema instead of three
    # with every reviewer call.
    def read(
        path: str = ".",
        start_line: int | None = None,
        end_line: int | None = None,
        grep: str | None = None,
    ) -> str:
        """A head-version file (numbered, 400 lines at most), a directory's files (path may be a
        glob), or with grep the lines matching that regex under path."""
        return _guarded(state, "read", lambda: code.read(path, start_line, end_line, grep))

    def get_diff(path: str | None = None) -> str:
        """The change under review as a unified diff, of one changed file or all."""
        return _guarded(state, "get_diff", lambda: code.get_diff(path))

    functions: dict[str, Callable[..., str]] = {
        "read": read,
        "get_diff": get_diff,
    }
    return [
        _tool(function, max_retries=TOOL_RETRIES)
        for name, function in functions.items()
        if mode.allows(name) and (diff_tool or name != "get_diff")
    ]
