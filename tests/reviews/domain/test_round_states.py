"""A round's states: the transition table, which round a page shows, what a delta compares."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.round_states import (
    OPEN,
    TRANSITIONS,
    DeltaBase,
    RoundRef,
    RoundState,
    can_cancel,
    can_rerun,
    delta_base,
    may_move,
    refusal,
    shown_round,
    sources_of,
    state_label,
)
from reviews.models import ReviewRound

states = st.sampled_from(list(RoundState))
TERMINAL = [s for s in RoundState if s.terminal]


def test_the_table_covers_the_model_states_and_says_them_in_words() -> None:
    assert {s.value for s in RoundState} == set(ReviewRound.State.values)
    assert set(TRANSITIONS) == set(RoundState)
    assert state_label("pending") == "Queued"
    for state in RoundState:
        assert "_" not in state.label and state.label[0].isupper()
    assert set(TERMINAL) == {"finished", "failed", "cancelled", "superseded"}


@given(states, states)
def test_a_terminal_state_never_changes(old: RoundState, new: RoundState) -> None:
    if old.terminal:
        assert not may_move(old, new)
        assert "already" in refusal(old, new)


@given(states, states)
def test_superseded_and_cancelled_only_from_queued_or_running(
    old: RoundState, new: RoundState
) -> None:
    if new in (RoundState.SUPERSEDED, RoundState.CANCELLED) and may_move(old, new):
        assert old in OPEN
    if new is RoundState.FINISHED and may_move(old, new):
        assert old is RoundState.RUNNING  # a verdict needs the pipeline to have run


@given(states)
def test_sources_are_the_inverse_of_the_table(new: RoundState) -> None:
    assert sources_of(new) == {old for old in RoundState if may_move(old, new)}
    assert RoundState.PENDING not in {t for targets in TRANSITIONS.values() for t in targets}


@given(states)
def test_cancel_and_rerun_are_offered_on_opposite_sides(state: RoundState) -> None:
    assert can_cancel(state) == (state in OPEN)
    assert can_rerun(state) == (state in (RoundState.FAILED, RoundState.CANCELLED))
    assert not (can_cancel(state) and can_rerun(state))


# -- the round a page shows -----------------------------------------------------------------


def _rounds(draw_states: list[str], heads: list[str]) -> list[RoundRef]:
    return [RoundRef(i + 1, s, h) for i, (s, h) in enumerate(zip(draw_states, heads, strict=True))]


histories = st.integers(min_value=1, max_value=6).flatmap(
    lambda n: st.tuples(
        st.lists(states.map(str), min_size=n, max_size=n),
        st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n),
    )
)


@pytest.mark.parametrize(
    ("states_", "shown"),
    [
        (["finished", "cancelled"], 1),  # a cancel never hides the last verdict
        (["finished", "failed"], 1),
        (["finished", "running"], 2),  # a live round is followed
        (["finished", "superseded", "pending"], 3),
        (["failed"], 1),  # nothing finished: the failure itself, with its error
        (["finished", "cancelled", "finished"], 3),
    ],
)
def test_the_round_shown_by_default(states_: list[str], shown: int) -> None:
    assert shown_round(_rounds(states_, ["a"] * len(states_))) == shown


@given(histories, st.integers(min_value=0, max_value=8))
def test_the_shown_round_exists_and_a_request_is_honoured(history, asked: int) -> None:
    rounds = _rounds(*history)
    numbers = {r.number for r in rounds}
    assert shown_round(rounds) in numbers
    assert shown_round(rounds, asked) == (asked if asked in numbers else shown_round(rounds))
    newest = rounds[-1]
    if newest.state in ("failed", "cancelled") and any(r.state == "finished" for r in rounds):
        assert next(r for r in rounds if r.number == shown_round(rounds)).state == "finished"


# -- what a delta compares with -------------------------------------------------------------


def test_a_rerun_on_the_same_head_says_so_and_compares_with_another_head() -> None:
    rounds = _rounds(["finished", "finished", "cancelled", "finished"], ["a", "b", "b", "b"])
    assert delta_base(rounds, 4).same_head_as == 2
    assert delta_base(rounds, 4).baseline == 1
    assert delta_base(rounds, 2).same_head_as is None and delta_base(rounds, 2).baseline == 1
    assert delta_base(rounds, 1) == delta_base(rounds, 99) == DeltaBase(None, None)
    only_one_head = _rounds(["finished", "cancelled", "finished"], ["a", "a", "a"])
    assert delta_base(only_one_head, 3).same_head_as == 1
    assert delta_base(only_one_head, 3).baseline is None


@given(histories, st.integers(min_value=1, max_value=6))
def test_the_baseline_is_the_last_finished_earlier_round_of_another_head(history, n: int) -> None:
    rounds = _rounds(*history)
    base = delta_base(rounds, n)
    this = next((r for r in rounds if r.number == n), None)
    by = {r.number: r for r in rounds}
    for other, same in ((base.baseline, False), (base.same_head_as, True)):
        if other is None:
            continue
        assert this is not None and other < n and by[other].state == "finished"
        assert (by[other].head_sha == this.head_sha) is same
        # no later finished round of that kind comes between
        assert not any(
            other < r.number < n and r.state == "finished" and (r.head_sha == this.head_sha) is same
            for r in rounds
        )
