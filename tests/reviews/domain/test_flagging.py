"""Two rounds without approval, then a person."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.flagging import ROUND_LIMIT, flag_reason, rounds_without_approval

levels = st.sampled_from(["ship", "hold", "block"])
histories = st.lists(levels, max_size=8).map(lambda ls: [(i + 1, lv) for i, lv in enumerate(ls)])


@pytest.mark.parametrize(
    ("outcomes", "flagged"),
    [
        ([], False),
        ([(1, "hold")], False),
        ([(1, "hold"), (2, "hold")], True),
        ([(1, "block"), (2, "hold")], True),
        ([(1, "hold"), (2, "ship")], False),
        ([(1, "hold"), (2, "ship"), (3, "block")], False),
        ([(1, "hold"), (2, "ship"), (3, "block"), (4, "hold")], True),
        # Given out of order: rounds are read by number.
        ([(2, "hold"), (1, "hold")], True),
    ],
)
def test_two_rounds_without_approval_flag(outcomes, flagged) -> None:
    assert (flag_reason(outcomes) is not None) is flagged


def test_the_reason_names_each_round_in_words() -> None:
    reason = flag_reason([(1, "hold"), (2, "block")])
    assert "round 1: changes requested (Hold)" in reason
    assert "round 2: blocked (Block)" in reason
    assert "a person should look" in reason


def test_rounds_a_person_cleared_do_not_count_again() -> None:
    history = [(1, "hold"), (2, "hold"), (3, "hold")]
    assert flag_reason(history, seen_through=2) is None
    assert flag_reason([*history, (4, "block")], seen_through=2) is not None


@given(histories)
def test_an_approval_always_ends_the_run(history) -> None:
    if history and history[-1][1] == "ship":
        assert flag_reason(history) is None
    run = rounds_without_approval(history)
    assert all(level != "ship" for _, level in run)


@given(histories, st.integers(min_value=0, max_value=9))
def test_flagged_exactly_when_enough_unapproved_rounds_trail(history, seen) -> None:
    trailing = 0
    for number, level in reversed(history):
        if number <= seen or level == "ship":
            break
        trailing += 1
    assert (flag_reason(history, seen_through=seen) is not None) is (trailing >= ROUND_LIMIT)
