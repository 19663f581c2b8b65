"""Running one reviewer (offline analyzer or model agent) or one panel finding.

The shell around reviews/agents: it reads the round's config and worktree, records findings
through the node service as the reviewer's own stream, and keeps the stream's statistics.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import F

from reviews.agents.analyzers import BANDIT, RUFF, RUFF_RULES, AnalyzerReviewer
from reviews.agents.codetools import CodeTools
from reviews.agents.prompts import ReviewerProfile, reviewer_system_prompt, verifier_system_prompt
from reviews.agents.redaction import redact_text
from reviews.agents.runtime import ModelConfig, ModelRunError, ModelRuntime, ReviewTools
from reviews.agents.secret_scan import run_secret_scan
from reviews.agents.untrusted import untrusted_block
from reviews.domain import types as t
from reviews.domain.briefs import build_brief
from reviews.domain.consensus import ConsensusError
from reviews.domain.panel import LensVerdict
from reviews.index.axes_compute import clearing_steps
from reviews.models import MemoryFact, ReviewerStream, ReviewNode, ReviewRound
from reviews.pipeline.faults import CONNECTION_ERRORS, retry_db
from reviews.services.nodes import node_confirm, node_panel_apply, node_record
from reviews.services.notes import note_record, notes_discard_unfinished
from reviews.services.worktrees import round_worktree
from reviews.sources.diffs import ChangedFile, parse_unified_diff
from reviews.sources.git_local import LocalGitSource
from reviews.sources.worktrees import UnsafePath, safe_join
from workspaces.models import ReviewerConfig, Workspace

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
MAX_DIFF_CHARS = 120_000


# -- round inputs -----------------------------------------------------------------------------


def fetch_diff(review_round: ReviewRound) -> str:
    pr = review_round.space.pull_request
    repo = pr.repository
    if repo.kind == repo.Kind.LOCAL:
        source = LocalGitSource(repo.local_path)
        return source.diff(review_round.base_sha or pr.base_ref, review_round.head_sha).text
    from reviews.services.github import github_client

    owner, name = repo.full_name.split("/", 1)
    with github_client() as client:
        return client.get_pull_diff(owner, name, pr.number)


def round_worktree_ready(review_round: ReviewRound) -> Path:
    return round_worktree(review_round=review_round)


def line_counter(root: Path) -> Callable[[str], int | None]:
    cache: dict[str, int | None] = {}

    def count(path: str) -> int | None:
        if path not in cache:
            try:
                target = safe_join(root, path)
                cache[path] = (
                    len(target.read_text(errors="replace").splitlines())
                    if target.is_file()
                    else None
                )
            except (UnsafePath, OSError):
                cache[path] = None
        return cache[path]

    return count


def file_text(root: Path) -> Callable[[str], list[str] | None]:
    def read(path: str) -> list[str] | None:
        try:
            return safe_join(root, path).read_text(errors="replace").splitlines()
        except (UnsafePath, OSError):
            return None

    return read


# -- model configuration ----------------------------------------------------------------------


def _model_for(
    config: ReviewerConfig | None, workspace: Workspace, *, budget: int
) -> tuple[ModelConfig, str] | None:
    provider = (config.model_provider if config else "") or settings.QUORUM_LLM_PROVIDER
    model = (config.model_name if config else "") or settings.QUORUM_LLM_MODEL
    if not provider or not model:
        return None
    base_url = (config.base_url if config else "") or settings.QUORUM_LLM_BASE_URL or None
    key_env = config.api_key_env if config else ""
    api_key = os.environ.get(key_env, "") if key_env else settings.QUORUM_LLM_API_KEY
    return (
        ModelConfig(
            provider=provider,
            model=model,
            base_url=base_url,
            timeout=float(workspace.call_timeout_seconds),
            total_tokens_limit=budget,
        ),
        api_key,
    )


def model_configured(workspace: Workspace) -> bool:
    if settings.QUORUM_LLM_PROVIDER and settings.QUORUM_LLM_MODEL:
        return True
    return workspace.reviewers.exclude(model_provider="").exclude(model_name="").exists()


def _config_key(stream: ReviewerStream) -> str:
    return stream.dimension or stream.agent.removeprefix("followup-")


# -- one reviewer -------------------------------------------------------------------------------


@contextmanager
def _tool_thread():
    """The run's tools execute on one thread we own, whose database connection we close."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quorum-tools")
    try:
        yield executor
    finally:
        executor.submit(connections.close_all).result()
        executor.shutdown(wait=True)


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
    ReviewerStream.objects.filter(pk=stream.pk).update(
        state=ReviewerStream.State.RUNNING, attempts=F("attempts") + 1
    )
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
        ReviewerStream.objects.filter(pk=stream.pk).update(
            rejected=F("rejected") + len(result.rejected)
        )
    if not result.ok:
        error = redact_text(result.error or "")  # a tool's stderr may quote the file
        ReviewerStream.objects.filter(pk=stream.pk).update(
            state=ReviewerStream.State.FAILED, error=error[:2000]
        )
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
    ReviewerStream.objects.filter(pk=stream.pk).update(
        state=ReviewerStream.State.DONE, coverage_note=note, notes=[checked]
    )
    return {"state": "done", "findings": len(result.payloads)}


def _brief(stream: ReviewerStream, files: list[ChangedFile], *, narrowed: bool) -> str:
    review_round = stream.round
    pr = review_round.space.pull_request
    listed = files[:10] if narrowed else files
    summaries = {
        f.path: f"{f.status}, +{f.additions} −{f.deletions}"
        + (" (not shown: binary or too large)" if f.not_for_models else "")
        for f in listed
    }
    dimension = (
        t.Dimension(stream.dimension)
        if stream.dimension in t.Dimension.__members__.values()
        else t.Dimension.QUALITY
    )
    brief = build_brief(
        map_pointers=change_map_pointers(review_round, dimension),
        reviewer=t.ReviewerSpec(dimension),
        what_changed=f"Pull request {pr}: {pr.title}",
        original_request=review_round.original_request or None,
        changed_files=summaries,
        out_of_scope=[
            "Style preferences with no functional effect beyond a P3 note.",
            "Code the change does not touch, unless the change makes it wrong.",
        ],
    )
    diff_text = "".join(
        f"diff --git a/{f.old_path or f.path} b/{f.path}\n" + "".join(h.text for h in f.hunks)
        for f in listed
        if not f.not_for_models
    )[:MAX_DIFF_CHARS]
    parts = [brief]
    if pr.body:
        parts.append(untrusted_block(pr.body, label="pull_request_description"))
    parts.append(untrusted_block(diff_text, label="diff"))
    return "\n\n".join(parts)


def change_map_pointers(review_round: ReviewRound, dimension: t.Dimension) -> list[str]:
    """The shared change map (§3.10), as anchors a finding may cite in `map_anchor`."""
    stats = review_round.stats or {}
    pointers = []
    for cohort in stats.get("cohorts", [])[:12]:
        radius = cohort.get("blast_radius")
        reach = f", {radius['definitions']} dependent definitions" if radius else ""
        symbols = ", ".join(cohort.get("symbols", [])[:6]) or ", ".join(cohort.get("paths", [])[:4])
        pointers.append(f"map:{cohort['key'][:8]} — {cohort['label']}{reach}: {symbols}")
    risks = stats.get("classification", {}).get("risks", [])
    if dimension in (t.Dimension.SECURITY, t.Dimension.ARCHITECTURE, t.Dimension.IMPLEMENTATION):
        for i, risk in enumerate(risks[:12]):
            pointers.append(
                f"map:risk-{i} — high-risk pattern {risk['pattern']} at {risk['where']}"
            )
    return pointers


def _review_tools(
    stream: ReviewerStream, root: Path, files: list[ChangedFile], lost: list[BaseException]
) -> ReviewTools:
    """The reviewer's tools. Their writes survive a database blip (reconnect, write again); if
    the database stays away, the error is kept in `lost` and the run is void: the model would
    otherwise be told "tool failed, continue" and the finding would silently be missing."""
    counter, text = line_counter(root), file_text(root)

    def durable(call: Callable[[], Any], what: str) -> Any:
        try:
            return retry_db(call, what=f"{stream.name}: {what}")
        except CONNECTION_ERRORS as exc:
            lost.append(exc)
            raise

    def add_review_node(payload: dict) -> str:
        result = durable(
            lambda: node_record(stream=stream, payload=payload, file_lines=counter, file_text=text),
            "add_review_node",
        )
        if result.node is None:
            why = result.rejection
            return f"Rejected, no finding was recorded: {why}. Correct the payload and call again."
        return f"Recorded finding {result.node.pk}."

    def confirm_review_node(node_id: str, reasoning: str | None = None) -> str:
        def confirm() -> str:
            node = ReviewNode.objects.filter(
                round=stream.round, pk=int(node_id) if str(node_id).isdigit() else -1
            ).first()
            if node is None:
                return f"There is no finding {node_id} in this review."
            try:
                node_confirm(node=node, by_agent=stream.agent, reason=redact_text(reasoning or ""))
            except ConsensusError as exc:
                return f"Refused: {exc}"
            return f"Confirmed finding {node.pk}."

        return durable(confirm, "confirm_review_node")

    def list_review_nodes() -> str:
        rows = durable(
            lambda: list(
                ReviewNode.objects.filter(round=stream.round)
                .select_related("stream")
                .order_by("id")
            ),
            "list_review_nodes",
        )
        return json.dumps(
            [
                {
                    "id": n.pk,
                    "reviewer": n.stream.agent,
                    "priority": n.priority,
                    "title": n.title,
                    "where": f"{n.path}:{n.start_line}" if n.path else "",
                    "status": n.status,
                }
                for n in rows
            ]
        )

    def _note(kind: str, **fields: Any) -> str:
        # Comments and tickets are shown and published like findings: redacted the same way.
        fields = {k: redact_text(v) if isinstance(v, str) else v for k, v in fields.items()}
        # Recorded once even when a retry writes it again; a ticket becomes a row people decide.
        durable(lambda: note_record(stream=stream, kind=kind, fields=fields), kind)
        return f"{kind.capitalize()} noted for the people reading this review."

    return ReviewTools(
        add_review_node=add_review_node,
        confirm_review_node=confirm_review_node,
        list_review_nodes=list_review_nodes,
        add_comment=lambda body, path=None, line=None: _note(
            "comment", body=body, path=path, line=line
        ),
        create_ticket=lambda title, body: _note("ticket", title=title, body=body),
        code=CodeTools(root, changed_files=files),
    )


def _memory_hints(stream: ReviewerStream) -> list[str]:
    space = stream.round.space
    facts = MemoryFact.objects.filter(
        workspace_id=space.workspace_id, repository_id=space.pull_request.repository_id
    ).order_by("-created_at")[:20]
    return [f.statement for f in facts]


PROCESS_BLOCK = "process block: the original request is missing; supply it to run this reviewer"


def _run_model_reviewer(stream: ReviewerStream) -> dict[str, Any]:
    review_round = stream.round
    if stream.dimension == t.Dimension.REQUIREMENTS and not review_round.original_request.strip():
        # §3.9: without the request there is nothing to check against. That blocks the process,
        # not the code: the stream waits for a person, and the verdict ignores it.
        ReviewerStream.objects.filter(pk=stream.pk).update(
            state=ReviewerStream.State.SKIPPED, error=PROCESS_BLOCK
        )
        return {"state": "process_block"}
    workspace = review_round.space.workspace
    config = ReviewerConfig.objects.filter(workspace=workspace, key=_config_key(stream)).first()
    model_streams = max(review_round.streams.filter(kind=ReviewerStream.Kind.MODEL).count(), 1)
    resolved = _model_for(
        config, workspace, budget=max(workspace.round_token_budget // model_streams, 1000)
    )
    if resolved is None:
        ReviewerStream.objects.filter(pk=stream.pk).update(
            state=ReviewerStream.State.FAILED, error="no model is configured for this reviewer"
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
                    profile, memory_hints=_memory_hints(stream), narrowed=narrowed
                ),
                user_prompt=_brief(stream, files, narrowed=narrowed),
                tools=_review_tools(stream, root, files, lost),
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
        done = {
            "state": ReviewerStream.State.DONE,
            "tokens_in": outcome.usage.input_tokens,
            "tokens_out": outcome.usage.output_tokens,
            "refused_calls": outcome.refused_calls,
            "redactions": outcome.redactions,
            "coverage_note": _coverage_note(outcome.output),
            "error": "",
        }
        retry_db(
            partial(ReviewerStream.objects.filter(pk=stream.pk).update, **done),
            what=f"{stream.name}: recording the run",
        )
        return {"state": "done", "attempt": attempt}
    last_error = redact_text(last_error)
    ReviewerStream.objects.filter(pk=stream.pk).update(
        state=ReviewerStream.State.FAILED, error=last_error[:2000]
    )
    return {"state": "failed", "error": last_error}


_COVERAGE = re.compile(r"\b(examined|reviewed|checked|looked at|covered)\b", re.IGNORECASE)


def _coverage_note(output: str) -> str:
    """The reviewer's closing statement of what it covered (§3.6: silence is not validation)."""
    text = redact_text(" ".join(output.split()))
    return text[:500] if _COVERAGE.search(text) else ""


# -- the verification panel -----------------------------------------------------------------


_VERDICT = re.compile(r"^\s*VERDICT:\s*(REAL|FALSE_POSITIVE)\b", re.IGNORECASE | re.MULTILINE)
_SEVERITY = re.compile(
    r"^\s*SEVERITY:\s*(critical|high|medium|low)\b", re.IGNORECASE | re.MULTILINE
)
_REASON = re.compile(r"^\s*REASON:\s*(.+)$", re.IGNORECASE | re.MULTILINE)


def parse_lens_answer(text: str) -> tuple[LensVerdict | None, t.Severity | None, str]:
    verdict = _VERDICT.search(text or "")
    severity = _SEVERITY.search(text or "")
    reason = _REASON.search(text or "")
    return (
        LensVerdict(verdict.group(1).lower()) if verdict else None,
        t.Severity(severity.group(1).lower()) if severity else None,
        redact_text(reason.group(1).strip())[:500] if reason else "",
    )


def _finding_prompt(node: ReviewNode, root: Path) -> str:
    lines = file_text(root)(node.path) if node.path else None
    excerpt = ""
    if lines and node.start_line:
        lo, hi = (
            max(node.start_line - 10, 1),
            min((node.end_line or node.start_line) + 10, len(lines)),
        )
        excerpt = "\n".join(f"{i:>5}  {lines[i - 1]}" for i in range(lo, hi + 1))
    finding = {
        "title": node.title,
        "type": node.type,
        "priority": node.priority,
        "category": node.category,
        "where": f"{node.path}:{node.start_line}-{node.end_line}" if node.path else "whole change",
        "body": node.body,
    }
    parts = [
        "The finding to judge (written by another reviewer):",
        untrusted_block(json.dumps(finding, indent=2), label="finding"),
    ]
    if excerpt:
        parts.append(untrusted_block(excerpt, label=f"code {node.path}"))
    return "\n\n".join(parts)


def verify_node(node: ReviewNode, review_round: ReviewRound) -> dict[str, Any]:
    workspace = review_round.space.workspace
    resolved = _model_for(None, workspace, budget=max(workspace.round_token_budget // 20, 1000))
    if resolved is None:
        return {"skipped": "no model"}
    model, api_key = resolved
    root = round_worktree(review_round=review_round)
    files = parse_unified_diff(review_round.diff)
    runtime = ModelRuntime(model)
    prompt = _finding_prompt(node, root)

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
        # A verifier that errors abstains; the panel never crashes the pipeline (§3.10).
        answers[lens] = (
            parse_lens_answer(outcome.output)
            if not isinstance(outcome, BaseException)
            else (None, None, f"abstained: {outcome}")
        )
    outcome = retry_db(
        lambda: node_panel_apply(node=node, answers=answers), what=f"panel on node {node.pk}"
    )
    return {"status": outcome.status.value}


# -- deterministic axes -------------------------------------------------------------------------


def deterministic_axes(review_round: ReviewRound) -> list[tuple[t.AxisName, t.AxisResult, dict]]:
    """visual and performance are never computed from nothing (§3.6); a submitted result stays."""
    submitted = set(review_round.axes.filter(source="submitted").values_list("axis", flat=True))
    out = []
    if review_round.stats.get("facts", {}).get("fast_exit") and "apiContract" not in submitted:
        # Nothing but documentation or formatting changed: no interface can have changed.
        reason = "docs-only or formatting-only change: no code, so no API, changed"
        out.append((t.AxisName.API_CONTRACT, t.AxisResult.PASS, {"reason": reason}))
        submitted.add("apiContract")
    for axis, reason in (
        (t.AxisName.VISUAL, "no visual result was submitted for this round"),
        (
            t.AxisName.PERFORMANCE,
            "performance is enumeration only: nothing computes it unless submitted",
        ),
        (
            t.AxisName.API_CONTRACT,
            "no code index for this round: the API contract was not computed",
        ),
    ):
        if axis.value not in submitted:
            steps = clearing_steps(axis, t.AxisResult.UNAVAILABLE)
            out.append((axis, t.AxisResult.UNAVAILABLE, {"reason": reason, "to_clear": steps}))
    return out
