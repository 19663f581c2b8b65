"""What a round's GitHub check shows: fields GitHub accepts whatever the round, and the verdict's
conclusion exactly as the issue maps it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.check_runs import (
    DESCRIPTION_LIMIT,
    SUMMARY_LIMIT,
    check_state,
    commit_status,
    conclusion_for,
)
from reviews.domain.round_states import RoundState
from reviews.domain.types import VerdictLevel

CONCLUSIONS = {"success", "failure", "neutral", "cancelled"}

rounds = st.builds(
    lambda state, number, verdict, section, hold_fails, running, newer, error: check_state(
        state=state,
        round_number=number,
        verdict=verdict,
        verdict_section=section,
        hold_fails=hold_fails,
        running=running,
        superseded_by=newer,
        error=error,
    ),
    st.sampled_from(list(RoundState)),
    st.integers(1, 10_000),
    st.none() | st.sampled_from(list(VerdictLevel)),
    st.text(max_size=200) | st.text(min_size=1, max_size=3).map(lambda s: s * 40_000),
    st.booleans(),
    st.text(max_size=200),
    st.none() | st.integers(1, 10_000),
    st.text(max_size=300),
)


@given(rounds)
def test_every_round_gives_fields_github_accepts(check) -> None:
    fields = check.fields("https://quorum.example.com/w/x/reviews/1/")
    # In progress has no conclusion; completed always has one of GitHub's values.
    assert (check.status == "completed") == (check.conclusion is not None)
    assert check.status in ("in_progress", "completed")
    assert check.conclusion is None or check.conclusion in CONCLUSIONS
    assert ("conclusion" in fields) == check.completed
    assert 0 < len(check.summary) <= SUMMARY_LIMIT and check.title
    state, description = commit_status(check)
    assert state in ("pending", "success", "failure", "error")
    assert len(description) <= DESCRIPTION_LIMIT
    assert (state == "pending") == (not check.completed)


@given(st.sampled_from(list(RoundState)), st.sampled_from(list(VerdictLevel)), st.booleans())
def test_only_a_finished_round_concludes_with_its_verdict(state, level, hold_fails) -> None:
    check = check_state(
        state=state,
        round_number=3,
        verdict=level,
        verdict_section="# Review: X",
        hold_fails=hold_fails,
    )
    if state is RoundState.FINISHED:
        assert check.conclusion == conclusion_for(level, hold_fails=hold_fails)
        assert check.summary == "# Review: X"
    elif state in (RoundState.PENDING, RoundState.RUNNING):
        assert check.status == "in_progress"
    else:  # superseded, cancelled, failed: completed without a verdict, never success
        assert check.conclusion in ("neutral", "cancelled")
        # A commit status has no neutral: only a superseded round passes (its successor gates).
        assert (commit_status(check)[0] == "success") == (state is RoundState.SUPERSEDED)


def test_the_verdict_maps_to_the_issue_s_conclusions() -> None:
    assert conclusion_for(VerdictLevel.SHIP, hold_fails=True) == "success"
    assert conclusion_for(VerdictLevel.BLOCK, hold_fails=False) == "failure"
    assert conclusion_for(VerdictLevel.HOLD, hold_fails=False) == "neutral"
    assert conclusion_for(VerdictLevel.HOLD, hold_fails=True) == "failure"


def test_a_summary_too_long_for_github_is_cut_with_a_pointer_to_the_page() -> None:
    check = check_state(
        state=RoundState.FINISHED,
        round_number=1,
        verdict=VerdictLevel.BLOCK,
        verdict_section="x" * 100_000,
        hold_fails=False,
    )
    assert len(check.summary) == SUMMARY_LIMIT
    assert check.summary.endswith("the full report is on the review page)")
