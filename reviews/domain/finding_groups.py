"""The guided review's finding groups and their pages.

The findings of a round are shown in groups: one per priority the tier shows in its main list,
then one for everything below the tier's threshold (reviews/domain/tiers.py). A group's first
render holds its first `CARDS_PER_GROUP` cards; the rest come a page at a time, so a review of
a thousand findings renders about as fast as one of ten. The page and the endpoint that serves
the next cards both ask this module which group a finding is in and which cards a page holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .tiers import DISPLAY_THRESHOLD
from .types import Priority, Tier

#: Cards of each group in the first render, and in each further page.
CARDS_PER_GROUP = 10

#: The group of the findings below the tier's threshold.
BELOW = "below"

#: Highest page number accepted; a bigger one is malformed rather than out of range.
MAX_PAGE = 100_000


class PageRequestError(ValueError):
    """A group or page that cannot be read (a 400, not a missing page)."""


def group_keys(tier: Tier) -> tuple[str, ...]:
    """The groups of a tier, in display order: its main priorities, then BELOW if any."""
    threshold = DISPLAY_THRESHOLD[tier].rank
    main = tuple(p.value for p in Priority if p.rank <= threshold)
    return (*main, BELOW) if len(main) < len(Priority) else main


def group_of(priority: Priority, tier: Tier) -> str:
    """The group a finding of `priority` is shown in."""
    return priority.value if priority.rank <= DISPLAY_THRESHOLD[tier].rank else BELOW


ALL_GROUPS = (*(p.value for p in Priority), BELOW)


def parse_page_request(group: str, page: str) -> tuple[str, int]:
    """`?group=P1&page=2` as (group, page); raises PageRequestError when either is malformed.
    A well-formed group the shown round's tier does not have is for the caller to refuse."""
    if group not in ALL_GROUPS:
        raise PageRequestError(
            f"“{group[:20]}” is not a group of findings: use one of {', '.join(ALL_GROUPS)}."
        )
    if not (page.isascii() and page.isdigit()) or len(page) > 6 or not 1 <= int(page) <= MAX_PAGE:
        raise PageRequestError(f"“{page[:20]}” is not a page number: use page=1, page=2, …")
    return group, int(page)


@dataclass(frozen=True, slots=True)
class GroupPage:
    """Which cards of a group one page shows: `total` findings, page `page` (from 1)."""

    key: str
    total: int
    page: int = 1
    per_page: int = CARDS_PER_GROUP

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def end(self) -> int:
        """One past the last card this page shows (the cards shown so far, pages 1..page)."""
        return min(self.total, self.offset + self.per_page)

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.end)

    @property
    def next_count(self) -> int:
        """How many cards the next page adds."""
        return min(self.per_page, self.remaining)

    @property
    def next_page(self) -> int | None:
        return self.page + 1 if self.remaining else None

    @property
    def in_range(self) -> bool:
        """Page 1 always exists (an empty group shows that it is empty); later ones only while
        they hold a card."""
        return self.page == 1 or self.offset < self.total


#: The priorities a merge waits for: each active one is listed under the verdict.
MERGE_BLOCKING = frozenset({Priority.P0, Priority.P1})


@dataclass(frozen=True, slots=True)
class FixLine:
    """A finding to fix before merge and where its card is: page `page` of group `group`."""

    node_id: int
    group: str
    page: int


def to_fix(
    findings: Iterable[tuple[int, Priority, bool]], tier: Tier, per_page: int = CARDS_PER_GROUP
) -> list[FixLine]:
    """The active P0/P1 findings, in the order given (the page's: priority, then confidence),
    each with the group page that holds its card. `findings` are the round's canonical
    findings as (id, priority, active), in that same order: a card's page is its position
    among its group's findings, active or not."""
    seen: dict[str, int] = {}
    lines = []
    for node_id, priority, active in findings:
        group = group_of(priority, tier)
        position = seen.get(group, 0)
        seen[group] = position + 1
        if active and priority in MERGE_BLOCKING:
            lines.append(FixLine(node_id=node_id, group=group, page=position // per_page + 1))
    return lines
