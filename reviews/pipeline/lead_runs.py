"""The lead's walkthrough: one model call over the cohorts and the change summary, answering in
the `Walkthrough` shape. No findings are sent, so the walkthrough cannot restate one."""

from __future__ import annotations

import logging

from reviews.agents.model_errors import ModelRunError
from reviews.agents.model_run_types import Answer
from reviews.agents.prompts import LEAD_WALKTHROUGH
from reviews.domain.model_answers import Walkthrough
from reviews.domain.round_stats import TourStep
from reviews.domain.spend import CallRole
from reviews.domain.untrusted import untrusted_block
from reviews.domain.walkthrough import tour_steps, walkthrough_brief
from reviews.models import ReviewRound
from reviews.pipeline.model_runs import round_model_answer

logger = logging.getLogger(__name__)

WALKTHROUGH_ANSWER = Answer(Walkthrough, "The walkthrough: its steps in reading order.")


def lead_walkthrough(review_round: ReviewRound) -> list[TourStep] | None:
    """The lead model's walkthrough, or None: no model, a fast-exit round, a failed call or an
    answer that never validated (the deterministic walkthrough stands in)."""
    facts = review_round.facts
    if facts is None or facts.fast_exit:
        return None
    stats = review_round.stats
    pr = review_round.space.pull_request
    prompt = "\n\n".join(
        [
            # The system prompt says what the markers mean: no notice before the block.
            untrusted_block(pr.title or "(no title)", label="pull_request_title", notice=False),
            walkthrough_brief(
                cohorts=stats.cohort_list,
                files=stats.files or [],
                classification=stats.classification,
            ),
        ]
    )
    try:
        outcome = round_model_answer(
            review_round,
            system_prompt=LEAD_WALKTHROUGH,
            user_prompt=prompt,
            name="lead-walkthrough",
            answer=WALKTHROUGH_ANSWER,
            role=CallRole.LEAD,
        )
    except ModelRunError as exc:
        logger.warning("round %s: the lead's walkthrough failed: %s", review_round.pk, exc)
        return None
    if outcome is None:
        return None
    if not isinstance(outcome.answer, Walkthrough):
        logger.info(
            "round %s: no walkthrough from the lead: %s", review_round.pk, outcome.answer_error
        )
        return None
    changed = {f.path for f in stats.files or []} | {p for c in stats.cohort_list for p in c.paths}
    return tour_steps(outcome.answer, changed) or None
