"""Admission of rounds into work, and the sweeper's grace for a queued coordinator message."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.admission import (
    DISPATCH_GRACE_SECONDS,
    admit,
    dispatch_grace,
    message_overdue,
)

waiting_lists = st.lists(st.integers(min_value=0, max_value=10_000), unique=True, max_size=40)


@given(st.integers(0, 50), waiting_lists, st.integers(1, 20))
def test_bound_held_and_order_kept(running: int, waiting: list[int], bound: int) -> None:
    admitted = admit(running, waiting, bound)
    # Never past the bound (rounds already running past it are left alone, none added).
    assert running + len(admitted) <= max(bound, running)
    # The oldest first: what is admitted is the head of the waiting line.
    assert admitted == waiting[: len(admitted)]


@given(st.integers(0, 50), waiting_lists, st.integers(1, 20))
def test_a_free_place_is_never_left_empty(running: int, waiting: list[int], bound: int) -> None:
    admitted = admit(running, waiting, bound)
    assert len(admitted) == min(len(waiting), max(0, bound - running))


@given(st.integers(0, 50), waiting_lists, st.integers(-3, 0))
def test_no_bound_admits_everyone(running: int, waiting: list[int], bound: int) -> None:
    assert admit(running, waiting, bound) == waiting


@given(
    st.integers(1, 6),
    st.lists(st.booleans(), min_size=1, max_size=200),
    st.randoms(use_true_random=False),
)
def test_no_starvation_and_rounds_start_in_order(bound: int, events: list[bool], rnd) -> None:
    """A simulation: rounds arrive (True) or a running round ends (False), in any order and
    ending any running round; every round that arrived is eventually admitted, in arrival
    order, and the bound is never passed."""
    waiting: list[int] = []
    running: set[int] = set()
    started: list[int] = []
    arrived = 0

    def admit_now() -> None:
        for number in admit(len(running), waiting, bound):
            waiting.remove(number)
            running.add(number)
            started.append(number)
        assert len(running) <= bound

    for arrives in events:
        if arrives:
            waiting.append(arrived)
            arrived += 1
        elif running:
            running.remove(rnd.choice(sorted(running)))
        admit_now()
    while running or waiting:  # the burst drains
        running.remove(min(running))
        admit_now()
    assert started == list(range(arrived))


@given(st.integers(0, 10_000), st.floats(3, 3600))
def test_grace_grows_with_the_queue_up_to_its_cap(queued: int, cap: float) -> None:
    grace = dispatch_grace(queued, cap=cap)
    assert DISPATCH_GRACE_SECONDS <= grace <= max(cap, DISPATCH_GRACE_SECONDS)
    assert dispatch_grace(queued + 1, cap=cap) >= grace


def test_a_lost_message_is_overdue_and_a_queued_one_is_not() -> None:
    assert message_overdue(None, 0, cap=120)  # never dispatched (or taken already)
    assert not message_overdue(1.0, 0, cap=120)  # just sent to an idle queue
    assert message_overdue(DISPATCH_GRACE_SECONDS + 1, 0, cap=120)  # idle queue: lost
    assert not message_overdue(40, 100, cap=120)  # behind a hundred messages: waiting
    assert message_overdue(121, 10_000, cap=120)  # never longer than the cap
