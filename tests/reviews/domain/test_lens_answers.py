"""Reading a verification lens's answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.lens_answers import MAX_CHARS, lens_answer
from reviews.domain.model_answers import LensAnswer, ReviewerClosing
from reviews.domain.panel import LensVerdict
from reviews.domain.types import Severity


def test_a_valid_answer_gives_its_verdict_severity_and_reason() -> None:
    answer = LensAnswer(verdict="false_positive", severity="high", reason=" guarded\n above ")
    assert lens_answer(answer) == (LensVerdict.FALSE_POSITIVE, Severity.HIGH, "guarded above")


def test_no_valid_answer_abstains_with_the_reason() -> None:
    assert lens_answer(None, "no valid answer after a retry: verdict: missing") == (
        None,
        None,
        "abstained: no valid answer after a retry: verdict: missing",
    )
    assert lens_answer(None) == (None, None, "abstained: no valid answer")
    # An answer in another shape is no verdict either.
    other = ReviewerClosing(summary="fine", covered=[])
    assert lens_answer(other)[:2] == (None, None)


def test_the_reason_is_redacted_and_cut() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    answer = LensAnswer(
        verdict="real", severity="low", reason=f"the token {secret} leaks " + "x" * 1000
    )
    _, _, reason = lens_answer(answer)
    assert secret not in reason and "[REDACTED" in reason
    assert len(reason) == MAX_CHARS
    _, _, why = lens_answer(None, f"bad reply quoting {secret} " + "y" * 1000)
    assert secret not in why and len(why) == MAX_CHARS


@given(
    st.sampled_from(["real", "false_positive"]),
    st.sampled_from(["critical", "high", "medium", "low"]),
    st.text(min_size=1, max_size=2000).filter(str.strip),
)
def test_every_valid_answer_is_a_verdict_and_a_severity(
    verdict: str, severity: str, reason: str
) -> None:
    got = lens_answer(LensAnswer(verdict=verdict, severity=severity, reason=reason))  # type: ignore[arg-type]
    assert got[0] is LensVerdict(verdict) and got[1] is Severity(severity)
    assert len(got[2]) <= MAX_CHARS
