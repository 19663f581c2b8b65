"""Reading what a model wrote at the end of its run. Pure: text in, values out.

- A verification lens answers with lines `VERDICT: REAL|FALSE_POSITIVE`, `SEVERITY:
  critical|high|medium|low` and `REASON: …`; a line it left out is None (the lens abstains on
  it), never a guess.

The reason is shown and stored: the text is redacted and cut to 500 characters. (A reviewer's
closing statement of coverage is a structured answer: reviews/domain/closings.py.)
"""

from __future__ import annotations

import re

from reviews.agents.redaction import redact_text

from .panel import LensVerdict
from .types import Severity

MAX_CHARS = 500

_VERDICT = re.compile(r"^\s*VERDICT:\s*(REAL|FALSE_POSITIVE)\b", re.IGNORECASE | re.MULTILINE)
_SEVERITY = re.compile(
    r"^\s*SEVERITY:\s*(critical|high|medium|low)\b", re.IGNORECASE | re.MULTILINE
)
_REASON = re.compile(r"^\s*REASON:\s*(.+)$", re.IGNORECASE | re.MULTILINE)


def parse_lens_answer(text: str) -> tuple[LensVerdict | None, Severity | None, str]:
    """A lens's verdict, severity vote and reason (empty when it gave none)."""
    verdict = _VERDICT.search(text or "")
    severity = _SEVERITY.search(text or "")
    reason = _REASON.search(text or "")
    return (
        LensVerdict(verdict.group(1).lower()) if verdict else None,
        Severity(severity.group(1).lower()) if severity else None,
        redact_text(reason.group(1).strip())[:MAX_CHARS] if reason else "",
    )
