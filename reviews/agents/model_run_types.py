"""What a caller gives the model runtime and gets back from it: the provider configuration
(`ModelConfig`), the shape an answer must take (`Answer`, given through the `final_answer`
tool), the tool implementations the caller injects (`ReviewTools`), and a run's outcome and
token usage. Plain data kept apart from the adapter (runtime) so the pipeline and the services
can build and read them without pydantic-ai's machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import UsageLimits

from reviews.agents.codetools import CodeTools

ProviderName = Literal["openai", "anthropic"]


PROVIDERS: tuple[str, ...] = ("openai", "anthropic")


def provider_name(value: str) -> ProviderName | None:
    """`value` as a provider Quorum can call, or None (unset or unknown)."""
    match value:
        case "openai" | "anthropic":
            return value
        case _:
            return None


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
