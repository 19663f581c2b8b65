"""Disagreements between reviewers."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.disagreements import disagreement_reasons, find_disagreements
from reviews.domain.types import NodeStatus, NodeType, NodeView, Priority, Side


def _node(id: str, agent: str, priority: Priority = Priority.P1, **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id=id,
        agent=agent,
        type=NodeType.BUG,
        priority=priority,
        confidence=0.8,
        path="app/views.py",
        start_line=10,
        end_line=14,
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


def test_it_flags_priorities_two_levels_apart() -> None:
    """P0 vs P2 on overlapping lines from two agents is a disagreement; P0 vs P1 is not."""
    a = _node("a", "impl", Priority.P0)
    assert disagreement_reasons(a, _node("b", "quality", Priority.P2)) == (
        "priorities 2 levels apart (P0 vs P2)",
    )
    assert disagreement_reasons(a, _node("c", "quality", Priority.P1)) == ()


def test_it_flags_bug_versus_suggestion() -> None:
    """Same priority, but one says bug and the other suggestion."""
    reasons = disagreement_reasons(
        _node("a", "impl"), _node("b", "quality", type=NodeType.SUGGESTION)
    )
    assert reasons == ("one says bug, the other suggestion",)


def test_it_ignores_same_agent_other_file_disjoint_lines_other_side_and_unanchored() -> None:
    """Only different agents on the same file, side and lines can disagree."""
    a = _node("a", "impl", Priority.P0)
    assert disagreement_reasons(a, _node("b", "impl", Priority.P3)) == ()
    assert disagreement_reasons(a, _node("b", "q", Priority.P3, path="app/other.py")) == ()
    assert disagreement_reasons(a, _node("b", "q", Priority.P3, start_line=15, end_line=20)) == ()
    assert disagreement_reasons(a, _node("b", "q", Priority.P3, side=Side.LEFT)) == ()
    assert disagreement_reasons(a, _node("b", "q", Priority.P3, path=None)) == ()


def test_it_skips_closed_nodes() -> None:
    """A dismissed or resolved node no longer disagrees with anyone."""
    nodes = [
        _node("a", "impl", Priority.P0),
        _node("b", "q", Priority.P3, status=NodeStatus.DISMISSED),
    ]
    assert find_disagreements(nodes) == []


def test_it_orders_by_path_line_and_ids() -> None:
    """Output order is by path, first line and id, regardless of input order; one entry per
    location (overlapping lines), between its most distant positions."""
    nodes = [
        _node("z", "impl", Priority.P0, path="b.py"),
        _node("y", "q", Priority.P3, path="b.py"),
        _node("x", "impl", Priority.P0, path="a.py", start_line=50, end_line=50),
        _node("w", "q", Priority.P2, path="a.py", start_line=50, end_line=52),
        _node("v", "arch", Priority.P3, path="a.py", start_line=1, end_line=60),
    ]
    found = find_disagreements(nodes)
    assert [d.ids for d in found] == [("x", "v"), ("z", "y")]
    assert found[0].canonical_ids == ("v", "w", "x")


nodes_strategy = st.lists(
    st.builds(
        lambda i, agent, p, t, start, length: _node(
            f"n{i}", agent, p, type=t, start_line=start, end_line=start + length
        ),
        st.integers(0, 10**6),
        st.sampled_from(["impl", "quality", "arch"]),
        st.sampled_from(list(Priority)),
        st.sampled_from([NodeType.BUG, NodeType.SUGGESTION, NodeType.QUESTION]),
        st.integers(1, 30),
        st.integers(0, 5),
    ),
    max_size=8,
    unique_by=lambda n: n.id,
)


@settings(max_examples=80, deadline=None)
@given(nodes_strategy, st.randoms(use_true_random=False))
def test_it_is_deterministic_whatever_the_input_order(nodes: list[NodeView], rnd) -> None:
    """Shuffling the input never changes the list of disagreements."""
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    assert find_disagreements(shuffled) == find_disagreements(nodes)
    for d in find_disagreements(nodes):
        assert set(d.first_reviewers) != set(d.second_reviewers)
        assert d.first.path == d.second.path and d.reasons
    # At most one per location: no two entries share a canonical node.
    seen = [c for d in find_disagreements(nodes) for c in d.canonical_ids]
    assert len(seen) == len(set(seen))


def test_duplicates_give_one_entry_with_each_side_and_its_reviewers() -> None:
    """Three reviewers say P0, bandit P2, all merged into one canonical: one entry, not one
    per pair of duplicates."""
    nodes = [
        _node("1", "implementation", Priority.P0, credited_agents=("arch", "sec", "bandit")),
        _node("2", "arch", Priority.P0, duplicate_of="1"),
        _node("3", "sec", Priority.P0, duplicate_of="1"),
        _node("4", "bandit", Priority.P2, duplicate_of="1"),
        _node("5", "ruff", Priority.P1, path="app/other.py"),
    ]
    [found] = find_disagreements(nodes)
    assert found.first_reviewers == ("arch", "implementation", "sec")
    assert found.second_reviewers == ("bandit",)
    assert found.ids == ("1", "4") and found.key == "1"
    assert found.node_ids == ("1", "2", "3", "4")
    assert found.summary.startswith("arch, implementation, sec (P0 bug) vs bandit (P2 bug)")
    # Duplicates of a closed canonical node disagree with nobody.
    closed = replace(nodes[0], status=NodeStatus.RESOLVED)
    assert find_disagreements([closed, *nodes[1:]]) == []
