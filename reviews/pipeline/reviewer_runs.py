"""Running one reviewer (offline analyzer or model agent) or one panel finding.

The shell around reviews/agents: it reads the round's config and worktree, records findings
through the node service as the reviewer's own stream, and moves the stream through its
states with the stream service.
"""

from __future__ import annotations

import asyncio
import os
from functools import partial
from typing import Any

from django.conf import settings
from django.db.models import F

from reviews.agents.analyzers import BANDIT, RUFF, RUFF_RULES, AnalyzerReviewer
from reviews.agents.codetools import CodeTools
from reviews.agents.prompts import ReviewerProfile, reviewer_system_prompt, verifier_system_prompt
from reviews.agents.redaction import redact_text
from reviews.agents.runtime import (
    ModelConfig,
    ModelRunError,
    ModelRuntime,
    ReviewTools,
    provider_name,
)
from reviews.agents.secret_scan import run_secret_scan
from reviews.domain import types as t
from reviews.domain.lens_answers import coverage_note, parse_lens_answer
from reviews.domain.outcomes import PROCESS_BLOCK
from reviews.domain.stream_states import StreamState
from reviews.models import ReviewerStream, ReviewNode, ReviewRound
from reviews.pipeline.faults import retry_db
from reviews.pipeline.inputs import file_text, line_counter
from reviews.pipeline.prompting import finding_prompt, memory_hints, reviewer_brief
from reviews.pipeline.tool_adapters import review_tools
from reviews.services.nodes import MAX_KEPT_REASONS, node_panel_apply, node_record
from reviews.services.notes import notes_discard_unfinished
from reviews.services.streams import stream_transition
from reviews.services.worktrees import round_worktree
from reviews.sources.diffs import parse_unified_diff
from workspaces.models import ReviewerConfig, Workspace, reviewer_model
from workspaces.rules import ModelChoice

SECRETS = AnalyzerReviewer(
    name="secrets",
    dimensions=frozenset({t.Dimension.SECURITY}),
    axes=frozenset({t.AxisName.SECURITY}),
    run=run_secret_scan,
)
ANALYZERS = {"ruff": RUFF, "bandit": BANDIT, "secrets": SECRETS}
ANALYZER_SCOPES = {
    "ruff": "ruff rules " + ", ".join(RUFF_RULES),
    "bandit": "bandit's security tests",
    "secrets": "credential patterns (the redaction rules)",
}
LENSES = ("reachability", "false_positive", "severity")


def _runtime_model(
    choice: ModelChoice | None, workspace: Workspace, *, budget: int
) -> tuple[ModelConfig, str] | None:
    """The runtime's settings for the chosen model, and its API key (read from the
    environment here, never stored)."""
    provider = provider_name(choice.provider) if choice is not None else None
    if choice is None or provider is None:
        return None
    key_env = choice.api_key_env
    api_key = os.environ.get(key_env, "") if key_env else settings.QUORUM_LLM_API_KEY
    return (
        ModelConfig(
            provider=provider,
            model=choice.name,
            base_url=choice.base_url or None,
            timeout=float(workspace.call_timeout_seconds),
            total_tokens_limit=budget,
        ),
        api_key,
    )


def _config_key(stream: ReviewerStream) -> str:
    return stream.dimension or stream.agent.removeprefix("followup-")


# -- one reviewer -------------------------------------------------------------------------------


def _reset_stream(stream: ReviewerStream) -> None:
    """A new attempt starts clean: findings of an unfinished attempt are not the reviewer's."""
    ReviewNode.objects.filter(stream=stream).delete()
    kept = notes_discard_unfinished(stream=stream)  # tickets a person already decided stay
    ReviewerStream.objects.filter(pk=stream.pk).update(
        accepted=0, rejected=0, rejection_reasons=[], notes=kept
    )


def run_stream(stream: ReviewerStream) -> dict[str, Any]:
    stream = ReviewerStream.objects.select_related(
        "round__space__workspace", "round__space__pull_request__repository"
    ).get(pk=stream.pk)
    if stream.state == ReviewerStream.State.DONE:
        return {"state": "done"}
    stream_transition(stream, StreamState.RUNNING, attempts=F("attempts") + 1)
    if stream.kind == ReviewerStream.Kind.ANALYZER:
        return _run_analyzer(stream)
    return _run_model_reviewer(stream)


def _run_analyzer(stream: ReviewerStream) -> dict[str, Any]:
    review_round = stream.round
    root = round_worktree(review_round=review_round)
    files = parse_unified_diff(review_round.diff)
    _reset_stream(stream)
    result = ANALYZERS[stream.agent].run(root, files)
    counter, text = line_counter(root), file_text(root)
    for finding in result.findings:
        node_record(
            stream=stream,
            payload=finding.payload,
            file_lines=counter,
            file_text=text,
            evidence=finding.evidence,
        )
    if result.rejected:
        # The reasons are kept like a model's (capped), so the page can say what was refused.
        kept = list(ReviewerStream.objects.get(pk=stream.pk).rejection_reasons)
        ReviewerStream.objects.filter(pk=stream.pk).update(
            rejected=F("rejected") + len(result.rejected),
            rejection_reasons=(kept + list(result.rejected))[:MAX_KEPT_REASONS],
        )
    if not result.ok:
        error = redact_text(result.error or "")  # a tool's stderr may quote the file
        stream_transition(stream, StreamState.FAILED, error=error)
        return {"state": "failed", "error": error}
    note = "; ".join(
        [f"{stream.agent} checked {len(result.files_checked)} changed file(s)", *result.notes]
    )
    # What it checked is its statement of coverage for its axes (reviews/domain/axes.py).
    checked = {
        "kind": "coverage",
        "files": list(result.files_checked),
        "scope": ANALYZER_SCOPES.get(stream.agent, ""),
    }
    stream_transition(stream, StreamState.DONE, coverage_note=note, notes=[checked])
    return {"state": "done", "findings": len(result.payloads)}


def _run_model_reviewer(stream: ReviewerStream) -> dict[str, Any]:
    review_round = stream.round
    if stream.dimension == t.Dimension.REQUIREMENTS and not review_round.original_request.strip():
        # Without the request there is nothing to check against. That blocks the process, not
        # the code: the stream waits for a person, and the verdict ignores it
        # (docs/domain-rules.md#reviewer-outcomes).
        stream_transition(stream, StreamState.SKIPPED, error=PROCESS_BLOCK)
        return {"state": "process_block"}
    workspace = review_round.space.workspace
    config = ReviewerConfig.objects.filter(workspace=workspace, key=_config_key(stream)).first()
    model_streams = max(review_round.streams.filter(kind=ReviewerStream.Kind.MODEL).count(), 1)
    resolved = _runtime_model(
        reviewer_model(config),
        workspace,
        budget=max(workspace.round_token_budget // model_streams, 1000),
    )
    if resolved is None:
        stream_transition(
            stream, StreamState.FAILED, error="no model is configured for this reviewer"
        )
        return {"state": "failed"}
    model, api_key = resolved
    root = round_worktree(review_round=review_round)
    files = parse_unified_diff(review_round.diff)
    profile = ReviewerProfile(
        name=stream.name,
        dimension=stream.dimension,
        instructions=config.instructions if config else "",
        brief=config.brief if config else "",
        anti_patterns=config.anti_patterns if config else (),
        criteria=config.criteria if config else (),
        few_shots=config.few_shots if config else (),
    )
    runtime = ModelRuntime(model)
    last_error = ""
    lost: list[BaseException] = []
    for attempt, narrowed in ((1, False), (2, True)):
        _reset_stream(stream)
        try:
            outcome = runtime.run_sync(
                api_key=api_key,
                system_prompt=reviewer_system_prompt(
                    profile, memory_hints=memory_hints(stream), narrowed=narrowed
                ),
                user_prompt=reviewer_brief(stream, files, narrowed=narrowed),
                tools=review_tools(stream, root, files, lost),
                name=stream.name,
            )
        except ModelRunError as exc:
            if lost:
                raise lost[0] from exc
            last_error = f"attempt {attempt}: {exc}"
            continue
        if lost:  # a finding or note could not be written: this run is not the reviewer's
            raise lost[0]
        # The model's work is done: a blip now reconnects rather than paying for the run again.
        retry_db(
            partial(
                stream_transition,
                stream,
                StreamState.DONE,
                error="",
                tokens_in=outcome.usage.input_tokens,
                tokens_out=outcome.usage.output_tokens,
                refused_calls=outcome.refused_calls,
                redactions=outcome.redactions,
                coverage_note=coverage_note(outcome.output),
            ),
            what=f"{stream.name}: recording the run",
        )
        return {"state": "done", "attempt": attempt}
    last_error = redact_text(last_error)
    stream_transition(stream, StreamState.FAILED, error=last_error)
    return {"state": "failed", "error": last_error}


# -- the verification panel -----------------------------------------------------------------


def verify_node(node: ReviewNode, review_round: ReviewRound) -> dict[str, Any]:
    workspace = review_round.space.workspace
    resolved = _runtime_model(
        reviewer_model(None), workspace, budget=max(workspace.round_token_budget // 20, 1000)
    )
    if resolved is None:
        return {"skipped": "no model"}
    model, api_key = resolved
    root = round_worktree(review_round=review_round)
    files = parse_unified_diff(review_round.diff)
    runtime = ModelRuntime(model)
    prompt = finding_prompt(node, root)

    async def lens_run(lens: str):
        return await runtime.run(
            api_key=api_key,
            system_prompt=verifier_system_prompt(lens),
            user_prompt=prompt,
            tools=ReviewTools(code=CodeTools(root, changed_files=files)),
            name=f"lens-{lens}",
        )

    async def panel():
        return await asyncio.gather(*(lens_run(lens) for lens in LENSES), return_exceptions=True)

    answers = {}
    for lens, outcome in zip(LENSES, asyncio.run(panel()), strict=True):
        # A verifier that errors abstains; the panel never crashes the pipeline
        # (docs/domain-rules.md#the-panel-lenses).
        answers[lens] = (
            parse_lens_answer(outcome.output)
            if not isinstance(outcome, BaseException)
            else (None, None, f"abstained: {outcome}")
        )
    outcome = retry_db(
        lambda: node_panel_apply(node=node, answers=answers), what=f"panel on node {node.pk}"
    )
    return {"status": outcome.status.value}
