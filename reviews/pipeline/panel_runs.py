"""One finding before the verification panel: three lenses in parallel, each answering in the
`LensAnswer` shape, their answers applied through the node service."""

from __future__ import annotations

import asyncio
from typing import Any

from reviews.agents.codetools import CodeTools
from reviews.agents.prompts import verifier_system_prompt
from reviews.agents.runtime import Answer, ModelRunError, ModelRuntime, ReviewTools, RunOutcome
from reviews.domain.lens_answers import lens_answer
from reviews.domain.model_answers import LensAnswer
from reviews.models import ReviewNode, ReviewRound
from reviews.pipeline.faults import retry_db
from reviews.pipeline.model_runs import runtime_model
from reviews.pipeline.prompting import finding_prompt
from reviews.services.nodes import node_panel_apply
from reviews.services.worktrees import round_worktree
from reviews.sources.diffs import parse_unified_diff
from workspaces.models import reviewer_model

LENSES = ("reachability", "false_positive", "severity")
LENS_ANSWER = Answer(
    LensAnswer, "Your verdict on the finding: real or false_positive, its severity, and why."
)


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
            answer=LENS_ANSWER,
        )

    async def panel():
        return await asyncio.gather(*(lens_run(lens) for lens in LENSES), return_exceptions=True)

    answers = {}
    for lens, outcome in zip(LENSES, asyncio.run(panel()), strict=True):
        # A verifier that errors abstains; the panel never crashes the pipeline
        # (docs/domain-rules.md#the-panel-lenses).
        if isinstance(outcome, ModelRunError):
            answers[lens] = lens_answer(None, str(outcome))
        elif isinstance(outcome, RunOutcome):
            answers[lens] = lens_answer(outcome.answer, outcome.answer_error)
        else:
            raise outcome
    outcome = retry_db(
        lambda: node_panel_apply(node=node, answers=answers), what=f"panel on node {node.pk}"
    )
    return {"status": outcome.status.value}
