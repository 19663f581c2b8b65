"""Consolidation: merge rules and severity floors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.dedup import apply_severity_floors, consolidate, similarity
from reviews.domain.types import Category, NodeStatus, NodeType, NodeView, Priority, Severity


def _node(id: str, agent: str = "impl", **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id=id,
        agent=agent,
        type=NodeType.BUG,
        priority=Priority.P2,
        confidence=0.7,
        category=Category.CORRECTNESS,
        severity=Severity.MEDIUM,
        path="app/views.py",
        start_line=10,
        end_line=12,
        title="Off-by-one in pagination",
        body="short",
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


def test_it_merges_the_same_issue_at_the_same_place_into_one_canonical_node() -> None:
    """Canonical credits every reviewer, keeps the longest body and the highest severity."""
    result = consolidate(
        [
            _node("a", "impl", priority=Priority.P1, confidence=0.6, severity=Severity.MEDIUM),
            _node(
                "b",
                "quality",
                title="Pagination off by one",
                body="a much longer body",
                start_line=11,
                end_line=11,
                severity=Severity.HIGH,
            ),
            _node("c", "arch", priority=Priority.P3, title="off-by-one pagination error"),
        ]
    )
    canonical = result.node("a")
    assert canonical.duplicate_of is None
    assert canonical.priority is Priority.P1
    assert canonical.severity is Severity.HIGH
    assert canonical.body == "a much longer body"
    assert canonical.reviewers == ("impl", "arch", "quality")
    assert result.node("b").duplicate_of == "a"
    assert result.node("c").duplicate_of == "a"
    assert [n.id for n in result.canonical] == ["a"]


def test_it_picks_the_canonical_by_priority_confidence_detail_reviewer_then_id() -> None:
    """The total order decides the canonical, never the input order (nor arrival ids first)."""
    same = dict(priority=Priority.P1)
    assert (
        consolidate([_node("b", **same, confidence=0.9), _node("a", "q", **same, confidence=0.8)])
        .canonical[0]
        .id
        == "b"
    )
    assert (
        consolidate([_node("b", **same, body="longer text"), _node("a", "q", **same)])
        .canonical[0]
        .id
        == "b"
    )
    # Equal findings: the reviewer's name decides before the id, so a re-run agrees.
    assert consolidate([_node("b", **same), _node("a", "q", **same)]).canonical[0].id == "b"
    assert consolidate([_node("b", "q", **same), _node("a", "q", **same)]).canonical[0].id == "a"


def test_it_keeps_a_different_issue_at_the_same_place_tagged_co_located() -> None:
    """Same lines, different problem: both kept, listed as co-located."""
    result = consolidate(
        [_node("a"), _node("b", "q", title="SQL injection in filter", category=Category.SECURITY)]
    )
    assert all(n.duplicate_of is None for n in result.nodes)
    assert result.co_located == (("a", "b"),)
    assert result.cross_referenced == ()


def test_it_cross_references_the_same_issue_at_different_places() -> None:
    """Same problem in two places: both kept, cross-referenced."""
    result = consolidate([_node("a"), _node("b", "q", path="app/api.py")])
    assert all(n.duplicate_of is None for n in result.nodes)
    assert result.cross_referenced == (("a", "b"),)
    assert result.co_located == ()


def test_it_keeps_conflicting_recommendations_with_attribution() -> None:
    """Same issue, same place, different fixes: both kept and linked as conflicting; a
    fix-less duplicate joins the best-ranked side."""
    result = consolidate(
        [
            _node("a", "impl", replacement_lines=("return page - 1",), confidence=0.9),
            _node("b", "quality", replacement_lines=("return max(page, 1)",)),
            _node("c", "arch"),
        ]
    )
    assert result.conflicting_fixes == (("a", "b"),)
    assert result.node("a").duplicate_of is None
    assert result.node("b").duplicate_of is None
    assert result.node("b").agent == "quality"
    assert result.node("c").duplicate_of == "a"


def test_it_gives_the_canonical_a_duplicate_fix_when_it_has_none() -> None:
    """A one-click suggestion from a duplicate is not lost by the merge."""
    result = consolidate(
        [_node("a", confidence=0.9), _node("b", "q", replacement_lines=("fixed()",))]
    )
    assert result.node("a").replacement_lines == ("fixed()",)
    assert result.conflicting_fixes == ()


def test_it_leaves_closed_nodes_alone_and_merges_unanchored_twins() -> None:
    """Dismissed nodes are untouched; two PR-wide remarks on the same issue merge."""
    dismissed = _node("a", status=NodeStatus.DISMISSED, duplicate_of="zz")
    result = consolidate(
        [
            dismissed,
            _node("b", path=None, start_line=None, end_line=None, title="No tests for pagination"),
            _node(
                "c", "q", path=None, start_line=None, end_line=None, title="Pagination: no tests"
            ),
        ]
    )
    assert result.node("a") == dismissed
    assert result.node("c").duplicate_of == "b"


def test_it_never_merges_titles_without_meaningful_words() -> None:
    """Two titles of only numbers/stop words are not evidence of the same issue."""
    assert similarity("42", "42") == 0.0
    result = consolidate([_node("a", title="42"), _node("b", "q", title="42")])
    assert all(n.duplicate_of is None for n in result.nodes)


def test_it_applies_the_severity_floors() -> None:
    """External exploit ≥ P1, hot-path perf ≥ P2, critical-path test gap ≥ P2, pure style = P3."""
    floor = apply_severity_floors
    assert (
        floor(
            _node(
                "a", category=Category.SECURITY, priority=Priority.P3, exploitable_externally=True
            )
        ).priority
        is Priority.P1
    )
    assert floor(_node("a", category=Category.SECURITY, priority=Priority.P3)).priority is (
        Priority.P3
    )
    assert (
        floor(
            _node("a", category=Category.PERFORMANCE, priority=Priority.P3, hot_path=True)
        ).priority
        is Priority.P2
    )
    assert (
        floor(
            _node("a", category=Category.TESTING, priority=Priority.P3, critical_path=True)
        ).priority
        is Priority.P2
    )
    assert (
        floor(
            _node(
                "a", category=Category.SECURITY, priority=Priority.P0, exploitable_externally=True
            )
        ).priority
        is Priority.P0
    )
    style = floor(
        _node("a", category=Category.STYLE, priority=Priority.P1, functional_effect=False)
    )
    assert (style.priority, style.severity) == (Priority.P3, Severity.LOW)
    raised = floor(
        _node(
            "a",
            category=Category.SECURITY,
            priority=Priority.P3,
            severity=Severity.LOW,
            exploitable_externally=True,
        )
    )
    assert raised.severity is Severity.HIGH


TITLES = [
    "Off-by-one in pagination",
    "pagination off by one",
    "SQL injection in filter",
    "Missing test for pagination",
    "42",
]

node_lists = st.lists(
    st.builds(
        lambda i, agent, p, conf, cat, title, start, length, body, fix, status, flag: _node(
            f"n{i:02d}",
            agent,
            priority=p,
            confidence=conf,
            category=cat,
            title=title,
            path=None if start == 0 else "app/views.py",
            start_line=start or None,
            end_line=(start + length) if start else None,
            body=body,
            replacement_lines=fix,
            status=status,
            exploitable_externally=flag,
            hot_path=flag,
        ),
        st.integers(0, 40),
        st.sampled_from(["impl", "quality", "arch"]),
        st.sampled_from(list(Priority)),
        st.sampled_from([0.3, 0.6, 0.9]),
        st.sampled_from([Category.CORRECTNESS, Category.SECURITY, Category.PERFORMANCE]),
        st.sampled_from(TITLES),
        st.integers(0, 20),
        st.integers(0, 4),
        st.sampled_from(["", "short", "a longer body text"]),
        st.sampled_from([None, ("a()",), ("b()",)]),
        st.sampled_from([NodeStatus.OPEN, NodeStatus.OPEN, NodeStatus.DISMISSED]),
        st.booleans(),
    ),
    max_size=9,
    unique_by=lambda n: n.id,
)


@settings(max_examples=150, deadline=None)
@given(node_lists)
def test_it_is_idempotent(nodes: list[NodeView]) -> None:
    """Consolidating a consolidated round changes nothing."""
    once = consolidate(nodes)
    assert consolidate(once.nodes) == once


@settings(max_examples=150, deadline=None)
@given(node_lists, st.randoms(use_true_random=False))
def test_it_is_order_independent(nodes: list[NodeView], rnd) -> None:
    """Any permutation of the input gives the same consolidation."""
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    assert consolidate(shuffled) == consolidate(nodes)


@settings(max_examples=100, deadline=None)
@given(node_lists)
def test_it_never_drops_a_node_and_links_only_to_canonical_nodes(nodes: list[NodeView]) -> None:
    """Every input node comes out; duplicates point at a canonical node that outranks them."""
    result = consolidate(nodes)
    assert sorted(n.id for n in result.nodes) == sorted(n.id for n in nodes)
    by_id = {n.id: n for n in result.nodes}
    for node in result.nodes:
        if node.active and node.duplicate_of is not None:
            canonical = by_id[node.duplicate_of]
            assert canonical.duplicate_of is None and canonical.active
            assert canonical.priority.rank <= node.priority.rank
            assert node.agent in canonical.reviewers
