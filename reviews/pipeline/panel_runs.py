"""One finding before the verification panel: three lenses in parallel, their answers applied
through the node service."""

from __future__ import annotations

import asyncio
from typing import Any

from reviews.agents.codetools import CodeTools
from reviews.agents.prompts import verifier_system_prompt
from reviews.agents.runtime import ModelRuntime, ReviewTools
from reviews.domain.lens_answers import parse_lens_answer
from reviews.models import ReviewNode, ReviewRound
from reviews.pipeline.faults import retry_db
from reviews.pipeline.model_runs import runtime_model
from reviews.pipeline.prompting import finding_prompt
from reviews.services.nodes import node_panel_apply
from reviews.services.worktrees import round_worktree
from reviews.sources.diffs import parse_unified_diff
from workspaces.models import reviewer_model

LENSES = ("reachability", "false_positive", "severity")


def verify_node(node: ReviewNode, review_round: ReviewRound) -> dict[str, Any]:
    workspace = review_round.space.workspace
    resolved = runtime_model(
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
