"""Running a model reviewer: its model and key from the settings, its brief and tools, one
narrowed retry, and what the run recorded."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from reviews.agents.call_limits import StopToken
from reviews.agents.model_errors import ModelRunError
from reviews.agents.model_run_types import (
    Answer,
    ModelConfig,
    ReviewTools,
    RunOutcome,
    RunUsageSummary,
)
from reviews.agents.offline import ANALYZERS
from reviews.agents.prompts import (
    REVIEWER_SYSTEM_PROMPT,
    ReviewerProfile,
    reviewer_role_brief,
    security_settings,
)
from reviews.agents.runtime import ModelRuntime
from reviews.domain import types as t
from reviews.domain.closings import prose_closing, stored_closing
from reviews.domain.model_answers import RequirementsClosing, ReviewerClosing
from reviews.domain.outcomes import DISABLED_BY_WORKSPACE, PROCESS_BLOCK
from reviews.domain.redaction import redact_text
from reviews.domain.spend import CallRole
from reviews.domain.stream_states import StreamState
from reviews.models import ReviewerStream, ReviewRound
from reviews.pipeline import budget_runs
from reviews.pipeline.attempts import reset_stream
from reviews.pipeline.faults import retry_db
from reviews.pipeline.model_waits import release_connection, round_stop
from reviews.pipeline.prompting import SharedBrief, memory_hints, shared_brief
from reviews.pipeline.tool_adapters import review_tools
from reviews.services.model_calls import config_key, missing_key, runtime_model
from reviews.services.round_files import round_changed_files
from reviews.services.spend import Spent, model_calls_record
from reviews.services.streams import stream_transition
from reviews.services.worktrees import round_worktree
from reviews.sources.diffs import ChangedFile
from workspaces.models import ReviewerConfig, Workspace, reviewer_model
from workspaces.rules import base_agent_dimension

# Model calls one reviewer's run may make: reading a file or two, recording over two turns and
# closing takes three to five; the last it may make is told so (reviews/agents/runtime.py).
REVIEWER_TURNS = 8


def closing_answer(stream: ReviewerStream) -> Answer:
    """The closing statement a model reviewer ends with. Prose only is kept as its summary
    (covering nothing), never retried or failed: the findings it recorded stand. Every
    reviewer is shown the same closing schema (their requests share one prefix); the
    requirements reviewer's role says what its table adds, and its closing is validated with
    the table."""
    shown = ReviewerClosing.model_json_schema()
    if stream.dimension == t.Dimension.REQUIREMENTS:
        return Answer(
            RequirementsClosing, "Close your review", from_prose=prose_closing, shown=shown
        )
    return Answer(ReviewerClosing, "Close your review", from_prose=prose_closing, shown=shown)


def spent(
    review_round: ReviewRound,
    *,
    role: CallRole,
    name: str,
    model: ModelConfig,
    usage: RunUsageSummary,
    failed: bool = False,
    batch: SpendBatch | None = None,
) -> None:
    """Record one agent run's spend in the round's ledger (or in `batch`, which does)."""
    calls = [Spent(role, name, model.model, model.provider, usage, failed)]
    if batch is not None:
        batch.add(review_round, calls)
    else:
        spent_all(review_round, calls)


class SpendBatch:
    """The spend of reviewers run together (run_inline), recorded in the ledger in one
    statement once every one of them has run, rather than one each as each ends. Nothing
    reads the ledger meanwhile: a reviewer's cap was set when it started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, tuple[ReviewRound, list[Spent]]] = {}

    def add(self, review_round: ReviewRound, calls: list[Spent]) -> None:
        with self._lock:
            self._calls.setdefault(review_round.pk, (review_round, []))[1].extend(calls)

    def write(self) -> None:
        with self._lock:
            batches, self._calls = list(self._calls.values()), {}
        for review_round, calls in batches:
            spent_all(review_round, calls)


def spent_all(review_round: ReviewRound, calls: list[Spent]) -> None:
    """Record agent runs' spend in the round's ledger (a database blip reconnects: the tokens
    are spent either way)."""
    retry_db(
        partial(model_calls_record, review_round=review_round, calls=calls),
        what=f"{', '.join(c.name for c in calls)}: recording the spend",
    )

    budget_runs.ledger_spent(review_round, calls)  # the ledger the coordinator's move read


def round_model_answer(
    review_round: ReviewRound,
    *,
    system_prompt: str,
    user_prompt: str,
    name: str,
    answer: Answer,
    role: CallRole,
) -> RunOutcome | None:
    """One tool-less call to the round's default model for an answer in a shape (the critic,
    the lead's walkthrough), capped by the round's token budgets. None when no model is
    configured, or when the budgets could not pay for the call (prepare decided, and the
    round's stats say so); a failed call raises ModelRunError for the caller to fall back.
    What it spent is in the round's ledger either way."""
    workspace = review_round.space.workspace

    if not budget_runs.shaped_calls_allowed(review_round):
        return None  # the budgets could not pay for it: the round's stats say so
    resolved = runtime_model(
        reviewer_model(None),
        workspace,
        budget=budget_runs.shaped_call_cap(
            review_round, share=max(workspace.round_token_budget // 20, 1000)
        ),
    )
    if resolved is None:
        return None
    model, api_key = resolved
    try:
        with round_stop(review_round.pk) as stop:
            release_connection()  # not held while the model answers
            outcome = ModelRuntime(model).run_sync(
                api_key=api_key,
                system_prompt=system_prompt,
                user_prompt=user_prompt,
                tools=ReviewTools(),
                name=name,
                answer=answer,
                stop=stop,
            )
    except ModelRunError as exc:
        spent(review_round, role=role, name=name, model=model, usage=exc.usage, failed=True)
        raise
    spent(review_round, role=role, name=name, model=model, usage=outcome.usage)
    return outcome


def reviewer_profile(
    stream: ReviewerStream,
    config: ReviewerConfig | None,
    *,
    requirements_check: bool,
    security: ReviewerConfig | bool | None = False,
) -> ReviewerProfile:
    """What the reviewer is told about itself: its name, the dimension the template gave its
    stream, the base agent it runs as, and its workspace settings. `security`: False, or the
    workspace's security reviewer (None: it has no settings) whose check this one carries."""
    security_check = (
        None
        if security is False
        else security_settings(security.brief, security.instructions, security.anti_patterns)
        if isinstance(security, ReviewerConfig)
        else security_settings()
    )
    return ReviewerProfile(
        name=stream.name,
        title=config.name if config else "",
        dimension=stream.dimension,
        base_agent=base_agent_dimension(config.base_agent) if config else "",
        requirements_check=requirements_check,
        instructions=config.instructions if config else "",
        brief=config.brief if config else "",
        anti_patterns=config.anti_patterns if config else (),
        criteria=config.criteria if config else (),
        few_shots=config.few_shots if config else (),
        security_check=security_check,
    )


@dataclass(frozen=True)
class ReviewerReads:
    """What was done once for reviewers claimed together (run_inline) instead of by each:
    their streams moved to running, their attempts counted (`started`, stream ids), and for the
    model reviewers the workspace's reviewer settings by key and the memory hints (None: not
    read, each reads its own)."""

    started: frozenset[int] = frozenset()
    configs: dict[str, ReviewerConfig] | None = None
    memory: tuple[str, ...] | None = None
    spend: SpendBatch | None = None  # their spend, recorded together once they have all run

    @staticmethod
    def settings_of(stream: ReviewerStream) -> tuple[dict[str, ReviewerConfig], tuple[str, ...]]:
        workspace = stream.round.space.workspace_id
        configs = ReviewerConfig.objects.filter(workspace_id=workspace)
        return {c.key: c for c in configs}, tuple(memory_hints(stream))


def _model_streams(review_round: ReviewRound, stream: ReviewerStream) -> int:
    """How many model reviewers share the round's budget: those prepare created (named in the
    round's stats, read with the step: no query), and a follow-up reviewer, created after them,
    counts itself as well. A round prepared before the stats named them counts its streams."""
    prepared = review_round.stats.reviewers
    if prepared is None:
        return review_round.streams.filter(kind=ReviewerStream.Kind.MODEL).count()
    models = sum(key not in ANALYZERS for key in prepared)
    return models + (stream.name not in prepared)


def run_model_reviewer(
    stream: ReviewerStream, reads: ReviewerReads | None = None
) -> dict[str, Any]:
    """`reads`: the settings and memory read for the reviewers claimed with this one."""
    review_round = stream.round
    if stream.dimension == t.Dimension.REQUIREMENTS and not review_round.original_request.strip():
        # Without the request there is nothing to check against. That blocks the process, not
        # the code: the stream waits for a person, and the verdict ignores it
        # (docs/domain-rules.md#reviewer-outcomes).
        stream_transition(stream, StreamState.SKIPPED, error=PROCESS_BLOCK)
        return {"state": "process_block"}
    workspace = review_round.space.workspace
    config = _workspace_config(workspace, config_key(stream), reads)
    if config is not None and not config.enabled:
        # The prepare stage leaves a disabled reviewer out; a follow-up of its dimension, or a
        # setting changed since, must not reach the model either.
        stream_transition(stream, StreamState.SKIPPED, error=DISABLED_BY_WORKSPACE)
        return {"state": "disabled"}
    resolved = _reviewer_model(stream, config)
    if resolved is None:
        stream_transition(
            stream, StreamState.FAILED, error="no model is configured for this reviewer"
        )
        return {"state": "failed"}
    model, api_key = resolved
    missing = missing_key(reviewer_model(config)) if not api_key else ""
    if missing:
        stream_transition(stream, StreamState.FAILED, error=missing)
        return {"state": "failed"}
    run = _ReviewerRun(
        stream=stream,
        model=model,
        api_key=api_key,
        root=round_worktree(review_round=review_round),
        files=round_changed_files(review_round),
        profile=_profile_of(stream, config, reads),
        memory=memory_hints(stream)
        if reads is None or reads.memory is None
        else list(reads.memory),
        batch=reads.spend if reads is not None else None,
    )
    return run.attempts()


def _workspace_config(
    workspace: Workspace, key: str, reads: ReviewerReads | None
) -> ReviewerConfig | None:
    """The workspace's settings for a reviewer key: from `reads` when read together."""
    if reads is None or reads.configs is None:
        return ReviewerConfig.objects.filter(workspace=workspace, key=key).first()
    return reads.configs.get(key)


def _reviewer_model(
    stream: ReviewerStream, config: ReviewerConfig | None
) -> tuple[ModelConfig, str] | None:
    """The reviewer's model and key, capped at its share of the round and no more than the
    budgets have left (a run that reaches its cap ends with what it recorded)."""
    review_round = stream.round
    workspace = review_round.space.workspace
    model_streams = max(_model_streams(review_round, stream), 1)
    return runtime_model(
        reviewer_model(config),
        workspace,
        budget=budget_runs.reviewer_cap(
            review_round,
            share=max(workspace.round_token_budget // model_streams, 1000),
            followup=stream.name.startswith("followup-"),
        ),
    )


def _profile_of(
    stream: ReviewerStream, config: ReviewerConfig | None, reads: ReviewerReads | None
) -> ReviewerProfile:
    """The reviewer's profile, with the checks the round's facts gave it."""
    facts = stream.round.facts
    checks_requirements = facts is not None and stream.name in (facts.requirements_check or ())
    security: ReviewerConfig | bool | None = False
    if facts is not None and stream.name in (facts.security_check or ()):
        security = _workspace_config(stream.round.space.workspace, "security", reads)
    return reviewer_profile(
        stream, config, requirements_check=checks_requirements, security=security
    )


@dataclass
class _ReviewerRun:
    """One model reviewer's run: at most two attempts (the second narrowed), every attempt's
    tokens and turns counted to the stream (a failed first attempt was paid for too)."""

    stream: ReviewerStream
    model: ModelConfig
    api_key: str
    root: Path
    files: list[ChangedFile]
    profile: ReviewerProfile
    memory: list[str]
    batch: SpendBatch | None
    lost: list[BaseException] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    turns: int = 0
    turn_budget: int = 0

    def __post_init__(self) -> None:
        self.runtime = ModelRuntime(self.model)

    def charge(self, usage: RunUsageSummary, *, failed: bool = False) -> None:
        stream = self.stream
        role = CallRole.FOLLOWUP if stream.name.startswith("followup-") else CallRole.REVIEWER
        spent(
            stream.round,
            role=role,
            name=stream.name,
            model=self.model,
            usage=usage,
            failed=failed,
            batch=self.batch,
        )
        self.tokens_in += usage.input_tokens
        self.tokens_out += usage.output_tokens
        self.turns += usage.requests

    def attempts(self) -> dict[str, Any]:
        stream = self.stream
        last_error = ""
        for attempt, narrowed in ((1, False), (2, True)):
            if attempt > 1 or stream.attempts > 1:
                # A first run of the stream (its first attempt counted) has nothing to discard.
                reset_stream(stream)
            try:
                outcome = self.call(narrowed=narrowed)
            except ModelRunError as exc:
                self.charge(exc.usage, failed=True)
                if self.lost:
                    raise self.lost[0] from exc
                if exc.kind == "stopped":
                    raise  # the round ended: no second attempt, nothing to record as failed
                last_error = f"attempt {attempt}: {exc}"
                if exc.kind == "budget":
                    break  # a second attempt would spend what the budget does not have
                continue
            self.charge(outcome.usage)
            if self.lost:  # a finding or note could not be written: this run is not the reviewer's
                raise self.lost[0]
            self.record_done(outcome)
            return {"state": "done", "attempt": attempt}
        last_error = redact_text(last_error)
        stream_transition(
            stream,
            StreamState.FAILED,
            error=last_error,
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            turns=self.turns,
            turn_budget=self.turn_budget,
        )
        return {"state": "failed", "error": last_error}

    def call(self, *, narrowed: bool) -> RunOutcome:
        """One attempt. Shared rules, tools and brief first, the reviewer's own part last: the
        round's reviewers send one common prefix, which providers cache and bill once."""
        stream = self.stream
        review_round = stream.round
        shared = shared_brief(review_round, self.files, narrowed=narrowed)
        self.turn_budget += REVIEWER_TURNS
        with round_stop(review_round.pk) as stop:
            release_connection()  # not held while the model answers; the tools take their own
            return self._run(shared, narrowed=narrowed, stop=stop)

    def _run(self, shared: SharedBrief, *, narrowed: bool, stop: StopToken) -> RunOutcome:
        stream = self.stream
        review_round = stream.round
        return self.runtime.run_sync(
            api_key=self.api_key,
            system_prompt=REVIEWER_SYSTEM_PROMPT,
            shared_prompt=shared.text,
            user_prompt=reviewer_role_brief(
                self.profile,
                memory_hints=self.memory,
                narrowed=narrowed,
                request_given=bool(review_round.original_request.strip()),
                original_request=review_round.original_request,
            ),
            tools=review_tools(
                stream, self.root, self.files, self.lost, whole_diff=shared.whole_diff
            ),
            name=stream.name,
            answer=closing_answer(stream),
            turn_budget=REVIEWER_TURNS,
            stop=stop,
        )

    def record_done(self, outcome: RunOutcome) -> None:
        """The model's work is done: a blip now reconnects rather than paying for the run
        again."""
        closing = stored_closing(outcome.answer, answer_error=outcome.answer_error)
        retry_db(
            partial(
                stream_transition,
                self.stream,
                StreamState.DONE,
                error="",
                tokens_in=self.tokens_in,
                tokens_out=self.tokens_out,
                turns=self.turns,
                turn_budget=self.turn_budget,
                refused_calls=outcome.refused_calls,
                redactions=outcome.redactions,
                coverage_note=closing.summary,
                closing=closing,
            ),
            what=f"{self.stream.name}: recording the run",
        )
