"""Review tiers: who runs, and what the main list shows.

Selection by tier never looks at the diff; `adaptive` does (see `selection`). A tier never
deletes a finding: `split_for_display` puts everything below the tier's threshold in a group
under the main list. Adaptive reviews display like balanced (P0-P2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .types import Dimension, NodeView, Priority, ReviewerSpec, Tier

_LIGHT = (ReviewerSpec(Dimension.IMPLEMENTATION),)
# The requirements reviewer checks the change against the original request; without one it
# waits for a person (a process block, never a verdict on the code).
_BALANCED = (
    ReviewerSpec(Dimension.IMPLEMENTATION),
    ReviewerSpec(Dimension.QUALITY),
    ReviewerSpec(Dimension.ARCHITECTURE),
    ReviewerSpec(Dimension.REQUIREMENTS),
)
# Security and performance are briefs on the architecture and implementation agents.
_THOROUGH = (*_BALANCED, ReviewerSpec(Dimension.SECURITY), ReviewerSpec(Dimension.PERFORMANCE))

TIER_REVIEWERS: dict[Tier, tuple[ReviewerSpec, ...]] = {
    Tier.LIGHT: _LIGHT,
    Tier.BALANCED: _BALANCED,
    Tier.THOROUGH: _THOROUGH,
}

#: Lowest priority still shown in the main list.
DISPLAY_THRESHOLD: dict[Tier, Priority] = {
    Tier.LIGHT: Priority.P1,
    Tier.BALANCED: Priority.P2,
    Tier.THOROUGH: Priority.P3,
    Tier.ADAPTIVE: Priority.P2,
}

DEFAULT_TIER = Tier.BALANCED


def reviewers_for_tier(tier: Tier) -> tuple[ReviewerSpec, ...]:
    if tier is Tier.ADAPTIVE:
        raise ValueError(
            "the adaptive tier selects from the change: use selection.select_reviewers"
        )
    return TIER_REVIEWERS[tier]


@dataclass(frozen=True, slots=True)
class DisplaySplit:
    main: tuple[NodeView, ...]
    grouped_below: tuple[NodeView, ...]


def split_for_display(nodes: Iterable[NodeView], tier: Tier) -> DisplaySplit:
    """Partition nodes (keeping their order) into the main list and the group below it."""
    threshold = DISPLAY_THRESHOLD[tier].rank
    main: list[NodeView] = []
    below: list[NodeView] = []
    for node in nodes:
        (main if node.priority.rank <= threshold else below).append(node)
    return DisplaySplit(main=tuple(main), grouped_below=tuple(below))
