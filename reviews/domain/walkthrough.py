"""The lead's walkthrough of a change. Pure.

The lead model is shown the cohorts (their labels and paths) and a summary of the change, never
a finding, so its tour cannot restate one. What it answers is kept only where it stays inside
the change: a path the change does not touch is dropped (a model invents plausible ones), text
is redacted and cut, and at most `MAX_STEPS` steps are kept.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from reviews.domain.redaction import redact_text

from .briefs import one_line
from .model_answers import Walkthrough
from .round_stats import ChangedFileSummary, Classification, CohortSummary, TourStep

MAX_STEPS = 12
MAX_TITLE = 120
MAX_EXPLANATION = 600
MAX_PATHS_SHOWN = 20  # per cohort in the lead's brief


def walkthrough_brief(
    *,
    cohorts: Sequence[CohortSummary],
    files: Sequence[ChangedFileSummary],
    classification: Classification | None,
) -> str:
    """What the lead is told about the change: its size, its files and its cohorts."""
    lines = ["## The change"]
    if classification is not None:
        lines.append(
            f"{classification.files} file(s), {classification.changed_lines} changed line(s), "
            f"size {classification.size}."
        )
        if classification.risks:
            patterns = sorted({r.pattern for r in classification.risks})
            lines.append("High-risk patterns touched: " + ", ".join(patterns) + ".")
    for f in files:
        lines.append(f"- {f.path} ({f.change}, +{f.additions} −{f.deletions})")
    lines.append("")
    lines.append("## Cohorts (related changes, most far-reaching first)")
    if not cohorts:
        lines.append("None: read the files in the order listed.")
    for i, cohort in enumerate(cohorts, start=1):
        shown = cohort.paths[:MAX_PATHS_SHOWN]
        more = (
            f" and {len(cohort.paths) - len(shown)} more" if len(cohort.paths) > len(shown) else ""
        )
        lines.append(f"{i}. {one_line(cohort.label, 200)}: {', '.join(shown)}{more}")
    return "\n".join(lines)


def tour_steps(answer: Walkthrough, changed: Collection[str]) -> list[TourStep]:
    """The lead's answer as stored: paths inside the change only, text redacted and cut."""
    allowed = set(changed)
    steps = []
    for step in answer.steps[:MAX_STEPS]:
        paths = list(dict.fromkeys(p for p in step.paths if p in allowed))
        steps.append(
            TourStep(
                title=one_line(redact_text(step.title), MAX_TITLE),
                paths=paths,
                explanation=one_line(redact_text(step.explanation), MAX_EXPLANATION),
            )
        )
    return steps
