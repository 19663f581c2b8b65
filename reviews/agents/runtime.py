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
  name with its own "Unknown tool name" retry; `ReviewModeGuard` counts each such call (after
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
import json
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic_ai import Agent, ModelRetry, RunContext, TextOutput, Tool, ToolOutput
from pydantic_ai._function_schema import FunctionSchema
from pydantic_ai.capabilities import UseThreadExecutor
from pydantic_ai.exceptions import (
    ToolFailed,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    CachePoint,
)
from pydantic_ai.usage import UsageLimits

from reviews.agents.call_limits import LimitedTransport, StopToken, limited_transport
from reviews.agents.codetools import CodeTools
from reviews.agents.mode import ReviewMode
from reviews.agents.model_errors import ModelRunError, PermanentModelError, classify_error
from reviews.agents.model_run_types import (
    ANSWER_TOOL,
    Answer,
    ModelConfig,
    ReviewTools,
    RunOutcome,
    RunUsageSummary,
)
from reviews.agents.review_mode_guard import ReviewModeGuard
from reviews.domain.model_answers import json_in_prose
from reviews.domain.node_schemas import node_tool_schema
from reviews.domain.redaction import redact

logger = logging.getLogger(__name__)


TOOL_RETRIES = 3  # validation retries per registered tool (bad arguments from the model)
REFUSALS_PER_TOOL = 5  # calls of one forbidden name answered with the refusal before giving up
# An invalid payload records nothing; the tool's reply says why.
_NODE_TOOL_DESCRIPTION = "Record one finding."


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
    guard: ReviewModeGuard
    _client: Any = field(repr=False)

    async def aclose(self) -> None:
        await self._client.close()


def _spent(guard: ReviewModeGuard, *, tool_calls: int = 0) -> RunUsageSummary:
    seen = guard.usage
    return RunUsageSummary(
        input_tokens=seen["input"],
        cached_input_tokens=seen["cached"],
        output_tokens=seen["output"],
        requests=seen["requests"],
        tool_calls=tool_calls,
        counted_locally=seen["local"] > 0,
    )


def _hooks(on_request: Any) -> dict[str, list[Any]]:
    return {"request": [on_request]} if on_request is not None else {}


def _transport(config: ModelConfig, default_url: str) -> LimitedTransport:
    return limited_transport(config.provider, config.base_url or default_url)


async def _stoppable[T](run: Coroutine[Any, Any, T], stop: StopToken | None, built: Any) -> T:
    """`run` as a task `stop` may cancel from any thread; then a `ModelRunError` "stopped"."""
    task = asyncio.ensure_future(run)
    if stop is None:
        return await task
    stop.bind(task)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if not stop.stopped or (current is not None and current.cancelling()):
            raise  # not ours: the caller itself is being cancelled
        built.guard.count_unanswered()  # the provider got it: it is paid for
        stopped = PermanentModelError(f"stopped: {stop.reason}", kind="stopped")
        stopped.usage = _spent(built.guard)
        raise stopped from None
    finally:
        stop.unbind(task)


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
        guard = ReviewModeGuard(mode=mode, answer=answer)
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
                    transport=_transport(config, "https://api.openai.com/v1"),
                    event_hooks=_hooks(on_request),
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
            http_client=AnthropicHttpxClient(
                transport=_transport(config, "https://api.anthropic.com"),
                event_hooks=_hooks(on_request),
            ),
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
        stop: StopToken | None = None,
    ) -> RunOutcome:
        """One reviewer run. `shared_prompt` is user content every run of the stage shares (the
        change, the diff): it goes first, `user_prompt` (this run's own brief) after it, so
        the runs' requests share one prefix a provider caches. Raises `ModelRunError` (see
        `retryable`) when it cannot finish; with `answer`, a reply that never validated is an
        abstention, not an error, and so is a run that used its `turn_budget` (model calls;
        its last request says it is the last) without answering: what it recorded stands.
        `stop`: see `_stoppable` (its request in flight is counted as spent)."""
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
        limits = self._limits(built, turn_budget if answer is not None else None)
        try:
            result = await _stoppable(built.agent.run(prompt, usage_limits=limits), stop, built)
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
            if isinstance(exc, ModelRunError):
                raise  # stopped
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

    def _limits(self, built: ReviewerAgent, turn_budget: int | None) -> UsageLimits:
        """The run's limits: the config's, and its turn budget (the guard tells the last turn)."""
        limits = self.config.usage_limits()
        if turn_budget is None:
            return limits
        built.guard.turn_budget = turn_budget
        return replace(limits, request_limit=min(turn_budget, self.config.request_limit))

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
        stop: StopToken | None = None,
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
                stop=stop,
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
    offered = _finding_tools(tools, state)
    note = _note_tool(tools, state)
    if note is not None:
        offered.append(("add_note", note))
    # A narrower mode simply does not offer the tool.
    registered = [tool for name, tool in offered if mode.allows(name)]
    if tools.code is not None:
        registered.extend(_code_tools(tools.code, mode, state, diff_tool=tools.diff_tool))
    return registered


def _finding_tools(tools: ReviewTools, state: _RunState) -> list[tuple[str, Tool[Any]]]:
    """The tools over the review's findings the caller implements: record, confirm, list."""
    offered: list[tuple[str, Tool[Any]]] = []
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
        offered.append(("add_review_node", node_tool))

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

        offered.append(
            (
                "confirm_review_node",
                _tool(confirm_review_node, max_retries=TOOL_RETRIES, sequential=True),
            )
        )

    if tools.list_review_nodes is not None:
        listing = tools.list_review_nodes

        def list_review_nodes() -> str:
            """List the findings recorded so far in this review, with their ids and status."""
            return _guarded(state, "list_review_nodes", listing)

        offered.append(
            (
                "list_review_nodes",
                _tool(list_review_nodes, max_retries=TOOL_RETRIES, sequential=True),
            )
        )
    return offered


def _note_tool(tools: ReviewTools, state: _RunState) -> Tool[Any] | None:
    """`add_note`, when the caller takes comments or tickets."""
    if tools.add_comment is None and tools.create_ticket is None:
        return None
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

    return _tool(add_note, max_retries=TOOL_RETRIES, sequential=True)


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
