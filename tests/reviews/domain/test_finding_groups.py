"""Finding groups and their pages, as plain values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.finding_groups import (
    BELOW,
    CARDS_PER_GROUP,
    GroupPage,
    PageRequestError,
    group_keys,
    group_of,
    parse_page_request,
)
from reviews.domain.types import Priority, Tier


def test_each_tier_has_its_main_priorities_then_the_group_below():
    assert group_keys(Tier.LIGHT) == ("P0", "P1", BELOW)
    assert group_keys(Tier.BALANCED) == ("P0", "P1", "P2", BELOW)
    assert group_keys(Tier.ADAPTIVE) == ("P0", "P1", "P2", BELOW)
    assert group_keys(Tier.THOROUGH) == ("P0", "P1", "P2", "P3")  # nothing is below


@pytest.mark.parametrize("tier", list(Tier))
def test_every_priority_falls_in_a_group_of_its_tier(tier):
    for priority in Priority:
        assert group_of(priority, tier) in group_keys(tier)
    assert group_of(Priority.P3, Tier.LIGHT) == BELOW and group_of(Priority.P1, Tier.LIGHT) == "P1"


@pytest.mark.parametrize(
    ("group", "page"),
    [
        ("P4", "1"),
        ("", "1"),
        ("p1", "1"),
        ("P1", ""),
        ("P1", "0"),
        ("P1", "-1"),
        ("P1", "1e3"),
        ("P1", "9999999"),
        ("P1", "２"),
    ],
)
def test_a_malformed_group_or_page_is_refused(group, page):
    with pytest.raises(PageRequestError):
        parse_page_request(group, page)


def test_a_well_formed_request_is_read():
    assert parse_page_request("P2", "3") == ("P2", 3)
    assert parse_page_request(BELOW, "1") == (BELOW, 1)


def test_a_page_says_what_it_shows_and_what_is_left():
    first = GroupPage(key="P1", total=23)
    assert (first.offset, first.end, first.remaining) == (0, CARDS_PER_GROUP, 23 - CARDS_PER_GROUP)
    assert first.next_page == 2 and first.next_count == CARDS_PER_GROUP
    last = GroupPage(key="P1", total=23, page=3)
    assert (last.offset, last.end, last.remaining, last.next_page) == (20, 23, 0, None)
    assert last.in_range and not GroupPage(key="P1", total=23, page=4).in_range
    assert GroupPage(key="P1", total=0).in_range  # an empty group still has its first page


@given(total=st.integers(0, 500), per_page=st.integers(1, 50))
def test_the_pages_of_a_group_show_each_card_once(total, per_page):
    shown: list[int] = []
    page = GroupPage(key="P0", total=total, per_page=per_page)
    while True:
        shown.extend(range(page.offset, page.end))
        if page.next_page is None:
            break
        assert page.next_count == min(per_page, total - page.end)
        page = GroupPage(key="P0", total=total, page=page.next_page, per_page=per_page)
    assert shown == list(range(total))
