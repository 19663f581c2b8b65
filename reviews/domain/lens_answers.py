"""Reading what a model wrote at the end of its run. Pure: answers in, values out.

- A verification lens answers in the `LensAnswer` shape (reviews/domain/model_answers.py);
  without a valid answer it abstains, and the reason it gave none is kept, never a guess.

The reason is shown and stored: the text is redacted and cut to 500 characters. (A reviewer's
closing statement of coverage is a structured answer: reviews/domain/closings.py.)
"""

from __future__ import annotations

from pydantic import BaseModel

from reviews.agents.redaction import redact_text

from .model_answers import LensAnswer
from .panel import LensVerdict
from .types import Severity

MAX_CHARS = 500


def lens_answer(
    answer: BaseModel | None, error: str = ""
) -> tuple[LensVerdict | None, Severity | None, str]:
    """A lens's verdict, severity vote and reason; with no valid answer, (None, None, why)."""
    if not isinstance(answer, LensAnswer):
        why = error or "no valid answer"
        return None, None, redact_text(f"abstained: {why}")[:MAX_CHARS]
    return (
        LensVerdict(answer.verdict),
        Severity(answer.severity),
        redact_text(" ".join(answer.reason.split()))[:MAX_CHARS],
    )
