"""Reading a verification lens's answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.lens_answers import MAX_CHARS, finding_ref, lens_answer, lens_batch
from reviews.domain.model_answers import LensAnswer, LensBatchAnswer, ReviewerClosing
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


# -- a lens's answer on a group, by ref ------------------------------------------------------

REFS = [finding_ref(i) for i in range(6)]


def _entry(ref: str, verdict: str = "real") -> dict[str, str]:
    return {"ref": ref, "verdict": verdict, "severity": "high", "reason": f"{ref} traced"}


def test_each_ref_gets_its_own_entry_whatever_the_order() -> None:
    answer = LensBatchAnswer(
        verdicts=[_entry("F2", "false_positive"), {**_entry("F1"), "ref": " f01 "}]
    )
    got = lens_batch(answer, ["F1", "F2"])
    assert got == {
        "F1": (LensVerdict.REAL, Severity.HIGH, "F1 traced"),
        "F2": (LensVerdict.FALSE_POSITIVE, Severity.HIGH, "F2 traced"),
    }


def test_a_bad_entry_costs_only_its_own_finding() -> None:
    answer = LensBatchAnswer(
        verdicts=[
            _entry("F1"),
            _entry("F2"),
            _entry("F2", "false_positive"),  # twice
            {**_entry("F3"), "verdict": "maybe"},  # invalid
            _entry("F9"),  # never given
            "F4 is fine",  # not an entry at all
            {"verdict": "real"},  # no ref
        ]
    )
    got = lens_batch(answer, ["F1", "F2", "F3", "F4"])
    assert got["F1"][0] is LensVerdict.REAL
    assert got["F2"] == (None, None, "abstained: the answer gave 2 verdicts for F2")
    assert got["F3"][:2] == (None, None)
    assert got["F3"][2].startswith("abstained: the verdict for F3 is invalid (verdict: Input")
    assert got["F4"] == (None, None, "abstained: the answer gave no verdict for F4")
    assert set(got) == {"F1", "F2", "F3", "F4"}


def test_no_valid_answer_abstains_on_every_ref_with_the_reason() -> None:
    got = lens_batch(None, ["F1", "F2"], "no valid answer after a retry: verdicts: missing")
    assert got == {
        ref: (None, None, "abstained: no valid answer after a retry: verdicts: missing")
        for ref in ("F1", "F2")
    }
    assert (
        lens_batch(LensAnswer(verdict="real", severity="low", reason="x"), ["F1"])["F1"][0] is None
    )


ENTRY = st.builds(
    _entry,
    st.sampled_from([*REFS, "F7", "F12", "X", ""]),
    st.sampled_from(["real", "false_positive"]),
) | st.fixed_dictionaries({"ref": st.sampled_from(REFS), "verdict": st.just("perhaps")})


@given(st.lists(ENTRY, max_size=14), st.randoms())
def test_every_ref_asked_gets_exactly_one_result_and_only_a_lone_valid_entry_is_a_verdict(
    entries: list[dict[str, str]], rnd
) -> None:
    shuffled = list(entries)
    rnd.shuffle(shuffled)
    got = lens_batch(LensBatchAnswer(verdicts=entries), REFS)
    assert got == lens_batch(LensBatchAnswer(verdicts=shuffled), REFS)  # order never matters
    assert list(got) == REFS
    for ref in REFS:
        mine = [e for e in entries if e["ref"] == ref]
        lone_valid = len(mine) == 1 and mine[0]["verdict"] in ("real", "false_positive")
        assert (got[ref][0] is not None) is lone_valid
        if lone_valid:
            assert got[ref] == (LensVerdict(mine[0]["verdict"]), Severity.HIGH, f"{ref} traced")
        else:
            assert got[ref][2].startswith("abstained: ")
