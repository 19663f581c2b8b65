"""Tiers: reviewers per tier and the main-list threshold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.tiers import security_host, split_for_display
from reviews.domain.types import (
    AgentKind,
    Dimension,
    NodeType,
    NodeView,
    Priority,
    ReviewerSpec,
    Tier,
)
from reviews.pipeline.template import reviewers_for


@pytest.mark.parametrize(
    ("tier", "dimensions"),
    [
        (Tier.LIGHT, ["implementation"]),
        (Tier.BALANCED, ["implementation", "quality", "architecture", "requirements"]),
        (
            Tier.THOROUGH,
            [
                "implementation",
                "quality",
                "architecture",
                "requirements",
                "security",
                "performance",
            ],
        ),
    ],
)
def test_it_runs_the_reviewers_of_each_tier(tier: Tier, dimensions: list[str]) -> None:
    """Each tier's model reviewers, in order, from the pipeline's one registry (the offline
    analyzers run beside them: here only the secret scanner, which runs on every change)."""
    facts = {"tier": str(tier), "model_configured": True}
    assert [r.dimension for r in reviewers_for(facts) if r.key != "secrets"] == dimensions


def test_it_runs_security_and_performance_on_existing_agents() -> None:
    """Security is the architecture agent, performance the implementation agent."""
    agents = {d: ReviewerSpec(d).agent for d in (Dimension.SECURITY, Dimension.PERFORMANCE)}
    assert agents[Dimension.SECURITY] is AgentKind.ARCHITECTURE
    assert agents[Dimension.PERFORMANCE] is AgentKind.IMPLEMENTATION


NODES = [
    NodeView(id=f"n{p.rank}", agent="a", type=NodeType.BUG, priority=p, confidence=0.5)
    for p in (Priority.P3, Priority.P0, Priority.P2, Priority.P1)
]


@pytest.mark.parametrize(
    ("tier", "main", "below"),
    [
        (Tier.LIGHT, ["n0", "n1"], ["n3", "n2"]),
        (Tier.BALANCED, ["n0", "n2", "n1"], ["n3"]),
        (Tier.ADAPTIVE, ["n0", "n2", "n1"], ["n3"]),
        (Tier.THOROUGH, ["n3", "n0", "n2", "n1"], []),
    ],
)
def test_it_groups_below_the_threshold_without_dropping_anything(
    tier: Tier, main: list[str], below: list[str]
) -> None:
    """The main list shows the tier's priorities; the rest is grouped below, order kept."""
    split = split_for_display(NODES, tier)
    assert [n.id for n in split.main] == main
    assert [n.id for n in split.grouped_below] == below
    assert len(split.main) + len(split.grouped_below) == len(NODES)


# -- the security check on a high-risk change ----------------------------------------------------

D = Dimension
reviewer_lists = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.sampled_from(list(Dimension))),
    max_size=6,
    unique_by=lambda r: r[0],
)


@pytest.mark.parametrize(
    ("reviewers", "host"),
    [
        # balanced: security is the architecture agent's brief
        (
            [
                ("implementation", D.IMPLEMENTATION),
                ("quality", D.QUALITY),
                ("architecture", D.ARCHITECTURE),
                ("requirements", D.REQUIREMENTS),
            ],
            "architecture",
        ),
        ([("implementation", D.IMPLEMENTATION)], "implementation"),  # light
        ([("requirements", D.REQUIREMENTS), ("quality", D.QUALITY)], "quality"),
        ([("requirements", D.REQUIREMENTS)], None),  # it checks the request, not the code
        ([("implementation", D.IMPLEMENTATION), ("security", D.SECURITY)], None),  # its own
        ([], None),
    ],
)
def test_a_high_risk_change_has_one_reviewer_carry_security(reviewers, host) -> None:
    assert security_host(reviewers, high_risk=True) == host
    assert security_host(reviewers, high_risk=False) is None


@given(reviewer_lists, st.booleans())
def test_the_carrier_is_one_of_the_rounds_reviewers_and_only_when_security_is_missing(
    reviewers, high_risk
) -> None:
    host = security_host(reviewers, high_risk=high_risk)
    if host is None:
        return
    assert high_risk and not any(d is D.SECURITY for _, d in reviewers)
    dimension = dict(reviewers)[host]
    assert dimension in (D.ARCHITECTURE, D.IMPLEMENTATION, D.QUALITY)
    # No better-placed reviewer was passed over.
    better = (D.ARCHITECTURE, D.IMPLEMENTATION, D.QUALITY)[
        : (D.ARCHITECTURE, D.IMPLEMENTATION, D.QUALITY).index(dimension)
    ]
    assert not any(d in better for _, d in reviewers)
