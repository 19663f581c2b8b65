"""A model reviewer's closing statement: what it covered, read from its structured answer. Pure.

Every model reviewer ends its run with a `ReviewerClosing` (the requirements reviewer with a
`RequirementsClosing`), given as a call to `final_answer` (reviews/agents/runtime.py).

- Coverage is what the answer lists under `covered`, nothing else. A reviewer that wrote only
  prose keeps its words as the summary and covers nothing: silence is not validation, so its
  token axis cannot pass on it. Its findings stand; the run is not a failure.
- An answer that did not validate after the retry is an abstention on coverage: its reason is
  kept, the findings stand.
- The requirements reviewer's table maps each item of the original request to yes / partial /
  no with evidence; `off_target` says the change implements something other than what was
  asked (the verdict blocks on it: reviews/domain/verdict.py `off_target_verdict`).

Free text is redacted and cut before it is stored or shown.
"""

from __future__ import annotations

from pydantic import BaseModel

from reviews.domain.redaction import redact_text

from .model_answers import RequirementsClosing, ReviewerClosing
from .stored_shapes import CoveredArea, RequirementRow, StreamClosing

MAX_CHARS = 500
MAX_AREA_CHARS = 200
MAX_ROWS = 50


def _clean(text: str, limit: int = MAX_CHARS) -> str:
    return redact_text(" ".join((text or "").split()))[:limit]


class ProseClosing(ReviewerClosing):
    """A closing the model wrote as prose only (no JSON, no `final_answer` call)."""


def prose_closing(text: str) -> ProseClosing:
    """A closing written as prose only: the words are the summary, no area is covered."""
    return ProseClosing(summary=_clean(text) or "(no closing words)", covered=[])


def stored_closing(answer: BaseModel | None, *, answer_error: str = "") -> StreamClosing:
    """What the stream records from the run's answer (None: the answer did not validate)."""
    if not isinstance(answer, ReviewerClosing):
        return StreamClosing(structured=False, answer_error=_clean(answer_error))
    if isinstance(answer, ProseClosing):
        return StreamClosing(summary=answer.summary, structured=False)
    covered = [
        CoveredArea(area=_clean(c.area, MAX_AREA_CHARS), reviewed_no_issue=c.reviewed_no_issue)
        for c in answer.covered
        if c.area.strip()
    ]
    if not isinstance(answer, RequirementsClosing):
        return StreamClosing(summary=_clean(answer.summary), covered=covered)
    return StreamClosing(
        summary=_clean(answer.summary),
        covered=covered,
        requirements=[
            RequirementRow(
                requirement=_clean(row.requirement, MAX_AREA_CHARS),
                covered=row.covered,
                evidence=_clean(row.evidence, MAX_AREA_CHARS),
            )
            for row in answer.requirements[:MAX_ROWS]
        ],
        off_target=answer.off_target,
        off_target_reason=_clean(answer.off_target_reason) if answer.off_target else "",
    )


def coverage_statement(closing: StreamClosing | None) -> str:
    """The areas a closing says were covered, as one line; "" when it covered none."""
    if closing is None:
        return ""
    return "; ".join(
        c.area + (" (reviewed, no issue)" if c.reviewed_no_issue else "") for c in closing.covered
    )


def off_target_reason(closing: StreamClosing | None) -> str:
    """Why the change is off target according to this closing, or "" when it is not."""
    if closing is None or not closing.off_target:
        return ""
    return closing.off_target_reason or "the change implements something other than the request"
