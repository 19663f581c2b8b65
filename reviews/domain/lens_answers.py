"""Reading what a model wrote at the end of its run. Pure: answers in, values out.

- A verification lens answers in the `LensAnswer` shape (reviews/domain/model_answers.py);
  without a valid answer it abstains, and the reason it gave none is kept, never a guess.
- A lens judging a group of findings answers in the `LensBatchAnswer` shape, one entry per
  ref (F1, F2 …). Each finding is read on its own (`lens_batch`): a ref the answer leaves
  out, gives twice or answers with an invalid entry abstains with that reason; an unknown ref
  is ignored; the other findings' verdicts stand, in whatever order they came.

The reason is shown and stored: the text is redacted and cut to 500 characters. (A reviewer's
closing statement of coverage is a structured answer: reviews/domain/closings.py.)
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from reviews.domain.redaction import redact_text

from .model_answers import LensAnswer, LensBatchAnswer
from .panel import LensVerdict
from .types import Severity

MAX_CHARS = 500

LensResult = tuple[LensVerdict | None, Severity | None, str]
_REF = re.compile(r"F\s*0*(\d+)", re.I)


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


def finding_ref(index: int) -> str:
    """The ref of the `index`-th finding of a group (from 0), as the prompt shows it."""
    return f"F{index + 1}"


def _ref(raw: Any) -> str | None:
    """A ref as the model wrote it ("F3", "f3", "F 3", "F03"), read as the prompt's "F3"."""
    if not isinstance(raw, str):
        return None
    found = _REF.fullmatch(raw.strip())
    return f"F{int(found.group(1))}" if found else None


def lens_batch(
    answer: BaseModel | None, refs: Sequence[str], error: str = ""
) -> dict[str, LensResult]:
    """Each ref's verdict, severity vote and reason from a lens's answer on a group; a ref with
    no usable entry abstains with the reason (see the module's docstring)."""
    if not isinstance(answer, LensBatchAnswer):
        abstained = lens_answer(None, error)
        return {ref: abstained for ref in refs}
    wanted = set(refs)
    entries: dict[str, list[Any]] = defaultdict(list)
    for entry in answer.verdicts:
        ref = _ref(entry.get("ref")) if isinstance(entry, dict) else None
        if ref in wanted:
            entries[ref].append(entry)
    found: dict[str, LensResult] = {}
    for ref in refs:
        given = entries.get(ref, [])
        if not given:
            found[ref] = lens_answer(None, f"the answer gave no verdict for {ref}")
        elif len(given) > 1:
            found[ref] = lens_answer(None, f"the answer gave {len(given)} verdicts for {ref}")
        else:
            try:
                found[ref] = lens_answer(LensAnswer.model_validate(given[0]))
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}"
                    for e in exc.errors()
                )
                found[ref] = lens_answer(None, f"the verdict for {ref} is invalid ({problems})")
    return found
