"""Locations are found by a sweep, not by comparing every pair: the same clusters as the
pairwise definition, and describing only the contested findings changes no disagreement."""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.disagreements import (
    contested,
    find_disagreements,
    overlap_clusters,
)
from reviews.domain.types import NodeStatus, NodeType, NodeView, Priority, Side

spans = st.lists(
    st.tuples(
        st.sampled_from(["a.py", "b.py"]),
        st.sampled_from(["RIGHT", "LEFT"]),
        st.integers(1, 30),
        st.integers(0, 6),
    ).map(lambda s: (s[0], s[1], s[2], s[2] + s[3])),
    max_size=25,
)


def _pairwise(items):
    """The definition: connected components of "same file and side, lines intersect"."""
    parent = list(range(len(items)))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for i, j in combinations(range(len(items)), 2):
        a, b = items[i], items[j]
        if a[:2] == b[:2] and a[2] <= b[3] and b[2] <= a[3]:
            parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


@given(spans)
def test_the_sweep_finds_the_pairwise_clusters(items):
    assert overlap_clusters(items) == _pairwise(items)


def test_a_thousand_findings_on_distinct_lines_are_no_location_to_decide():
    items = [("a.py", "RIGHT", 10 * i, 10 * i + 2) for i in range(1000)]
    assert len(overlap_clusters(items)) == 1000


nodes = st.lists(
    st.builds(
        lambda i, agent, prio, kind, start, length, dup, status: (
            i,
            agent,
            prio,
            kind,
            start,
            length,
            dup,
            status,
        ),
        st.integers(0, 10**6),
        st.sampled_from(["impl", "quality", "security"]),
        st.sampled_from(list(Priority)),
        st.sampled_from([NodeType.BUG, NodeType.SUGGESTION, NodeType.QUESTION]),
        st.integers(1, 20),
        st.integers(0, 4),
        st.integers(-1, 6),
        st.sampled_from([NodeStatus.OPEN, NodeStatus.CONSENSUS_READY, NodeStatus.DISMISSED]),
    ),
    max_size=14,
    unique_by=lambda n: n[0],
)


@settings(max_examples=200)
@given(nodes)
def test_only_the_contested_findings_are_needed_to_find_every_disagreement(raw):
    ids = [str(n[0]) for n in raw]
    views = [
        NodeView(
            id=str(i),
            agent=agent,
            type=kind,
            priority=prio,
            confidence=0.8,
            status=status,
            path="a.py",
            side=Side.RIGHT,
            start_line=start,
            end_line=start + length,
            duplicate_of=ids[dup] if 0 <= dup < len(ids) and ids[dup] != str(i) else None,
        )
        for (i, agent, prio, kind, start, length, dup, status) in raw
    ]
    assert find_disagreements(contested(views)) == find_disagreements(views)
