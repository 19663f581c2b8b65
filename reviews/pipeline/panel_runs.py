"""A group of findings before the verification panel: each lens judges the whole group in one
call, answering in the `LensBatchAnswer` shape (a verdict per ref), the lenses in parallel; the
answers are mapped back to the findings (reviews/domain/lens_answers.py `lens_batch`) and
applied through the node service in one go."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from typing import Any

from reviews.agents.call_limits import StopToken
from reviews.agents.codetools import CodeTools
from reviews.agents.model_errors import ModelRunError, PermanentModelError
from reviews.agents.model_run_types import Answer, ModelConfig, ReviewTools, RunOutcome
from reviews.agents.prompts import VERIFIER_PANEL, verifier_lens_brief
from reviews.agents.runtime import ModelRuntime
from reviews.agents.token_count import count_tokens
from reviews.domain.budget import LENSES as LENSES_PER_CHECK
from reviews.domain.budget import panel_estimate
from reviews.domain.lens_answers import LensResult, finding_ref, lens_batch
from reviews.domain.model_answers import LensBatchAnswer
from reviews.domain.panel import LENSES
from reviews.domain.spend import CallRole
from reviews.models import ReviewNode, ReviewRound
from reviews.pipeline import budget_runs
from reviews.pipeline.faults import retry_db
from reviews.pipeline.model_runs import spent_all
from reviews.pipeline.model_waits import release_connection, round_stop
from reviews.pipeline.prompting import finding_code, findings_prompt
from reviews.services.model_calls import runtime_model
from reviews.services.node_panel import node_panel_apply
from reviews.services.spend import Spent
from reviews.services.worktrees import round_worktree
from reviews.sources.diffs import parse_unified_diff
from workspaces.models import reviewer_model

LENS_ANSWER = Answer(
    LensBatchAnswer,
    "Your verdict on each finding, by its ref.",
)


def verify_group(
    nodes: Sequence[ReviewNode], review_round: ReviewRound, *, rule_reachable: Collection[int] = ()
) -> dict[str, Any]:
    """`rule_reachable`: the nodes not put to lens 1 (their analyzer rule stands for it)."""
    workspace = review_round.space.workspace
    root = round_worktree(review_round=review_round)
    shown = [(finding_ref(i), node) for i, node in enumerate(nodes)]
    code = finding_code(nodes, root)
    resolved = runtime_model(
        reviewer_model(None),
        workspace,
        # A lens's budget grows with its group (the same share per finding as one call each),
        # no more than the budgets have left.
        budget=budget_runs.lens_cap(
            review_round,
            share=max(workspace.round_token_budget // 20, 1000) * max(len(nodes), 1),
            estimate=panel_estimate(count_tokens(findings_prompt(shown, code))) // LENSES_PER_CHECK,
        ),
    )
    if resolved is None:
        return {"skipped": "no model"}
    model, api_key = resolved
    runtime = ModelRuntime(model)
    by_lens = {
        lens: [
            (ref, node)
            for ref, node in shown
            if lens != "reachability" or node.pk not in rule_reachable
        ]
        for lens in LENSES
    }
    asked = {lens: group for lens, group in by_lens.items() if group}

    def tools(group: list[tuple[str, ReviewNode]]) -> ReviewTools:
        # The code is in the prompt: the code tools (and their schemas) go out only when a
        # finding came without any (its file is gone, or it names no lines).
        if all(node.path in code and node.start_line for _, node in group):
            return ReviewTools()
        return ReviewTools(
            code=CodeTools(root, changed_files=parse_unified_diff(review_round.diff))
        )

    async def lens_run(lens: str, group: list[tuple[str, ReviewNode]], stop: StopToken):
        # The panel's rules and the group come first, alike for the lenses given the same
        # group (a prefix the provider caches); the lens's own paragraph last.
        return await runtime.run(
            api_key=api_key,
            system_prompt=VERIFIER_PANEL,
            shared_prompt=findings_prompt(group, code),
            user_prompt=verifier_lens_brief(lens),
            tools=tools(group),
            name=f"lens-{lens}",
            answer=LENS_ANSWER,
            stop=stop,
        )

    async def panel(stop: StopToken):
        return await asyncio.gather(
            *(lens_run(lens, group, stop) for lens, group in asked.items()),
            return_exceptions=True,
        )

    with round_stop(review_round.pk) as stop:
        release_connection()  # not held while the lenses answer
        answered = asyncio.run(panel(stop))
    answers, calls = _lens_answers(nodes, asked, answered, model)
    spent_all(review_round, calls)
    if stop.stopped:
        raise PermanentModelError(f"stopped: {stop.reason}", kind="stopped")
    outcomes = retry_db(
        lambda: node_panel_apply(nodes=nodes, answers=answers),
        what=f"panel on nodes {', '.join(str(n.pk) for n in nodes)}",
    )
    return {"panel": {str(pk): o.status.value for pk, o in outcomes.items()}}


def _lens_answers(
    nodes: Sequence[ReviewNode],
    asked: dict[str, list[tuple[str, ReviewNode]]],
    outcomes: Sequence[Any],
    model: ModelConfig,
) -> tuple[dict[int, dict[str, LensResult]], list[Spent]]:
    """Each finding's answer from each lens it was put to, and what each lens call spent. A
    verifier that errors abstains on every finding it was given; the panel never crashes the
    pipeline (docs/domain-rules.md#the-panel-lenses). What it spent is recorded either way."""
    answers: dict[int, dict[str, LensResult]] = {node.pk: {} for node in nodes}
    calls: list[Spent] = []
    for (lens, group), outcome in zip(asked.items(), outcomes, strict=True):
        refs = [ref for ref, _ in group]
        name = f"lens-{lens}"
        if isinstance(outcome, ModelRunError):
            calls.append(
                Spent(CallRole.LENS, name, model.model, model.provider, outcome.usage, True)
            )
            found = lens_batch(None, refs, str(outcome))
        elif isinstance(outcome, RunOutcome):
            calls.append(Spent(CallRole.LENS, name, model.model, model.provider, outcome.usage))
            found = lens_batch(outcome.answer, refs, outcome.answer_error)
        else:
            raise outcome
        for ref, node in group:
            answers[node.pk][lens] = found[ref]
    return answers, calls
