"""Reading a verification lens's answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.lens_answers import MAX_CHARS, parse_lens_answer
from reviews.domain.panel import LensVerdict
from reviews.domain.types import Severity


def test_a_full_answer_is_read_whatever_its_case_and_surroundings() -> None:
    text = "Looking at it.\n  verdict: false_positive\nSEVERITY: High\nREASON:  guarded above  \n"
    assert parse_lens_answer(text) == (LensVerdict.FALSE_POSITIVE, Severity.HIGH, "guarded above")


def test_a_missing_line_abstains_rather_than_guesses() -> None:
    assert parse_lens_answer("VERDICT: REAL") == (LensVerdict.REAL, None, "")
    assert parse_lens_answer("") == (None, None, "")
    assert parse_lens_answer(None) == (None, None, "")  # type: ignore[arg-type]
    # Only at the start of a line: prose that mentions a verdict is not one.
    assert parse_lens_answer("my VERDICT: REAL would be") == (None, None, "")
    assert parse_lens_answer("VERDICT: MAYBE\nSEVERITY: huge")[:2] == (None, None)


def test_the_reason_is_redacted_and_cut() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    _, _, reason = parse_lens_answer(f"REASON: the token {secret} leaks " + "x" * 1000)
    assert secret not in reason and "[REDACTED" in reason
    assert len(reason) == MAX_CHARS


@given(st.text(max_size=2000))
def test_any_text_parses_to_known_values_or_none(text: str) -> None:
    verdict, severity, reason = parse_lens_answer(text)
    assert verdict is None or isinstance(verdict, LensVerdict)
    assert severity is None or isinstance(severity, Severity)
    assert len(reason) <= MAX_CHARS
