"""Finding groups and their pages, as plain values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.finding_groups import (
    BELOW,
    CARDS_PER_GROUP,
    MERGE_BLOCKING,
    GroupPage,
    PageRequestError,
    group_keys,
    group_of,
    parse_page_request,
    to_fix,
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


_findings = st.lists(st.tuples(st.sampled_from(list(Priority)), st.booleans()), max_size=60).map(
    lambda found: [(i, p, active) for i, (p, active) in enumerate(found)]
)


@given(_findings, st.sampled_from(list(Tier)), st.integers(1, 12))
def test_to_fix_lists_every_active_p0_p1_once_with_the_page_holding_its_card(
    findings, tier, per_page
):
    lines = to_fix(findings, tier, per_page)
    wanted = [i for i, p, active in findings if active and p in MERGE_BLOCKING]
    assert [line.node_id for line in lines] == wanted
    for line in lines:
        _, priority, _ = findings[line.node_id]
        members = [i for i, p, _ in findings if group_of(p, tier) == line.group]
        assert line.group == group_of(priority, tier)
        window = GroupPage(key=line.group, total=len(members), page=line.page, per_page=per_page)
        assert line.node_id in members[window.offset : window.end]


def test_a_dismissed_p0_and_an_open_p2_are_not_to_fix():
    found = [(1, Priority.P0, False), (2, Priority.P2, True), (3, Priority.P1, True)]
    assert [line.node_id for line in to_fix(found, Tier.BALANCED)] == [3]
