"""Review tiers: what the main list shows. Who runs in each tier is the pipeline's one reviewer
registry (reviews/pipeline/template.py `PR_REVIEW_REVIEWERS`).

Selection by tier never looks at the diff; `adaptive` does (see `selection`). A tier never
deletes a finding: `split_for_display` puts everything below the tier's threshold in a group
under the main list. Adaptive reviews display like balanced (P0-P2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .types import Dimension, NodeView, Priority, Tier

#: Lowest priority still shown in the main list.
DISPLAY_THRESHOLD: dict[Tier, Priority] = {
    Tier.LIGHT: Priority.P1,
    Tier.BALANCED: Priority.P2,
    Tier.THOROUGH: Priority.P3,
    Tier.ADAPTIVE: Priority.P2,
}

DEFAULT_TIER = Tier.BALANCED


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


#: Which reviewer takes the security check when a tier has no security reviewer: security is
#: the architecture agent's brief, then the implementation agent's; the requirements reviewer
#: checks the change against the request, not the code, so it never hosts it.
SECURITY_HOSTS = (Dimension.ARCHITECTURE, Dimension.IMPLEMENTATION, Dimension.QUALITY)


def security_host(
    model_reviewers: Iterable[tuple[str, Dimension]], *, high_risk: bool
) -> str | None:
    """The key of the reviewer whose brief also carries the security check, or None.

    A high-risk change (the classification found a pattern such as SQL built from input or a
    secret) warrants security whatever the tier. Rather than a whole follow-up reviewer after
    the panel, the round's reviewer best placed for it checks security in the first pass: one
    model call fewer, and its findings meet the panel with everyone else's. Only when the round
    schedules no security reviewer of its own (`model_reviewers`: key and dimension, in order).
    """
    reviewers = list(model_reviewers)
    if not high_risk or any(d is Dimension.SECURITY for _, d in reviewers):
        return None
    for wanted in SECURITY_HOSTS:
        host = next((key for key, d in reviewers if d is wanted), None)
        if host is not None:
            return host
    return None
