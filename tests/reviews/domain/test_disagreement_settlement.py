"""Deciding a disagreement for a side leaves its location one finding (issue 37)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.dedup import consolidate
from reviews.domain.disagreements import Disagreement, find_disagreements, settle
from reviews.domain.types import (
    Category,
    NodeStatus,
    NodeType,
    NodeView,
    Priority,
    Severity,
    severity_for_priority,
)

PATH = "shop/search.py"


def _node(id: str, agent: str, priority: Priority, kind: NodeType, **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id=id,
        agent=agent,
        type=kind,
        priority=priority,
        severity=severity_for_priority(priority),
        confidence=0.9,
        category=Category.SECURITY,
        path=PATH,
        start_line=12,
        end_line=12,
        title="SQL query built from the search term",
        body="The term is formatted into the statement.",
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


def _search_line() -> list[NodeView]:
    """Security's P0 bug (bandit's B608 merged into it) next to architecture's P2
    recommendation about the same line, which quality repeats in its own words."""
    return [
        _node("1", "security", Priority.P0, NodeType.BUG, credited_agents=("bandit",)),
        _node(
            "2", "bandit", Priority.P2, NodeType.BUG, title="B608", confidence=0.6, duplicate_of="1"
        ),
        _node(
            "3",
            "architecture",
            Priority.P2,
            NodeType.RECOMMENDATION,
            category=Category.MAINTAINABILITY,
            title="Prefer the ORM for the search query",
            body="A queryset filter reads better than raw SQL here.",
            credited_agents=("quality",),
        ),
        _node(
            "4",
            "quality",
            Priority.P3,
            NodeType.RECOMMENDATION,
            category=Category.MAINTAINABILITY,
            title="Use the ORM for searching",
            duplicate_of="3",
        ),
        _node("5", "implementation", Priority.P1, NodeType.BUG, path="shop/db.py"),
    ]


def _one(nodes: list[NodeView]) -> Disagreement:
    [found] = find_disagreements(nodes)
    return found


def test_the_kept_side_takes_in_the_other_sides_findings_and_credits_their_reviewers() -> None:
    nodes = _search_line()
    found = _one(nodes)
    assert found.canonical_ids == ("1", "3")
    settled = settle(found, "first", {n.id: n for n in nodes})
    assert (settled.kept, settled.folded) == ("1", ("3",))
    assert settled.position == (Priority.P0, NodeType.BUG)
    after = {n.id: n for n in settled.nodes}
    # The recommendation and its duplicate now repeat the kept finding, marked as folded.
    assert (after["3"].duplicate_of, after["3"].folded_into) == ("1", "1")
    assert (after["4"].duplicate_of, after["4"].folded_into) == ("1", "1")
    assert {(n.priority, n.type, n.severity) for n in after.values()} == {
        (Priority.P0, NodeType.BUG, Severity.CRITICAL)
    }
    assert after["1"].reviewers == ("security", "architecture", "bandit", "quality")
    assert "5" not in after  # elsewhere: untouched
    # Nothing left to decide at the line, and one card there.
    result = [after.get(n.id, n) for n in nodes]
    assert find_disagreements(result) == []
    assert [n.id for n in result if n.duplicate_of is None and n.path == PATH] == ["1"]


def test_deciding_for_the_duplicate_side_keeps_its_canonical_finding() -> None:
    """bandit's P2 (a duplicate of security's P0) wins: the location is kept on security's
    canonical finding, now at P2, and the recommendation is folded into it."""
    nodes = [n for n in _search_line() if n.id in ("1", "2")]
    found = _one(nodes)
    assert (found.first.id, found.second.id) == ("1", "2")
    settled = settle(found, "second", {n.id: n for n in nodes})
    assert (settled.kept, settled.folded) == ("1", ())
    assert {(n.id, n.priority) for n in settled.nodes} == {("1", Priority.P2)}


def test_a_lead_pass_after_the_decision_keeps_the_fold() -> None:
    """The recommendation is another issue than the SQL bug: matching alone would split it
    out again as its own card. A person's fold stands."""
    nodes = _search_line()
    settled = settle(_one(nodes), "first", {n.id: n for n in nodes})
    decided = {n.id: n for n in nodes} | {n.id: n for n in settled.nodes}
    again = consolidate(decided.values())
    assert again.node("3").duplicate_of == "1" and again.node("4").duplicate_of == "1"
    assert consolidate(again.nodes) == again
    assert find_disagreements(again.nodes) == []
    assert set(again.node("1").reviewers) == {"security", "architecture", "bandit", "quality"}


def test_a_fold_follows_its_target_into_a_later_merge_and_ignores_loops() -> None:
    kept = _node("1", "security", Priority.P0, NodeType.BUG)
    twin = _node("2", "implementation", Priority.P0, NodeType.BUG, confidence=0.95)
    folded = _node("3", "architecture", Priority.P0, NodeType.BUG, title="ORM", duplicate_of="1")
    folded = replace(folded, folded_into="1")
    merged = consolidate([kept, twin, folded])
    assert merged.node("1").duplicate_of == "2"  # the twin outranks the kept finding now
    assert merged.node("3").duplicate_of == "2"
    looping = [
        replace(kept, folded_into="3", title="Shell call"),
        replace(folded, folded_into="1", duplicate_of=None),
    ]
    assert {n.duplicate_of for n in consolidate(looping).nodes} == {None}


def test_a_side_that_is_not_the_disagreements_is_refused() -> None:
    nodes = _search_line()
    found = replace(_one(nodes), canonical_ids=("3",))
    with pytest.raises(ValueError, match="not a canonical node"):
        settle(found, "first", {n.id: n for n in nodes})


TITLES = [
    "SQL injection in the search",
    "SQL built from the search term",
    "Prefer the ORM for the search query",
    "Missing test for search",
    "42",
]

rounds = st.lists(
    st.builds(
        lambda i, agent, p, kind, cat, title, start, length, conf, body: NodeView(
            id=str(i),
            agent=agent,
            type=kind,
            priority=p,
            confidence=conf,
            category=cat,
            title=title,
            body=body,
            path=PATH,
            start_line=start,
            end_line=start + length,
        ),
        st.integers(1, 60),
        st.sampled_from(["security", "architecture", "quality", "bandit"]),
        st.sampled_from(list(Priority)),
        st.sampled_from([NodeType.BUG, NodeType.SUGGESTION, NodeType.RECOMMENDATION]),
        st.sampled_from([Category.SECURITY, Category.MAINTAINABILITY, Category.TESTING]),
        st.sampled_from(TITLES),
        st.integers(1, 20),
        st.integers(0, 3),
        st.sampled_from([0.6, 0.9]),
        st.sampled_from(["", "short", "a longer body text"]),
    ),
    max_size=9,
    unique_by=lambda n: n.id,
)


@settings(max_examples=200, deadline=None)
@given(rounds, st.sampled_from(["first", "second"]))
def test_a_decided_location_has_one_finding_for_everyone_and_stays_so(nodes, side) -> None:
    """After the lead pass, each disagreement decided for either side: every node of the
    location holds the chosen position, exactly one canonical finding is left there, it credits
    every reviewer of the location, nothing elsewhere changes, nothing is left to decide there,
    and a lead pass run again keeps the folded findings duplicates, credited."""
    before = {n.id: n for n in consolidate(nodes).nodes}
    for found in find_disagreements(before.values()):
        settled = settle(found, side, before)
        after = before | {n.id: n for n in settled.nodes}
        location = set(found.node_ids) | set(found.canonical_ids)
        touched = {n.id for n in settled.nodes}
        assert touched <= location | {
            n.id for n in before.values() if n.duplicate_of in settled.folded
        }
        assert {(after[i].priority, after[i].type) for i in found.node_ids} == {settled.position}
        assert settled.kept in found.canonical_ids
        canonical_here = [i for i in location if after[i].duplicate_of is None]
        assert canonical_here == [settled.kept]
        kept = after[settled.kept]
        assert {before[i].agent for i in location} <= set(kept.reviewers)
        assert not any(set(d.node_ids) & location for d in find_disagreements(after.values()))

        again = consolidate(after.values())
        assert consolidate(again.nodes) == again
        for folded in settled.folded:
            target = again.node(folded).duplicate_of
            assert target is not None and again.node(target).duplicate_of is None
            assert before[folded].agent in again.node(target).reviewers
        # The location's nodes all hold one position now: a disagreement there is with a
        # finding from outside it (another canonical node may stand for the location and
        # reach further lines), never among them.
        for d in find_disagreements(again.nodes):
            assert not set(d.node_ids) & location or set(d.node_ids) - location


@settings(max_examples=100, deadline=None)
@given(rounds)
def test_a_closed_finding_is_never_brought_back_by_a_fold(nodes) -> None:
    """Folded into a finding a person later dismisses, the folded findings go with it."""
    before = {n.id: n for n in consolidate(nodes).nodes}
    for found in find_disagreements(before.values()):
        settled = settle(found, "first", before)
        after = before | {n.id: n for n in settled.nodes}
        after[settled.kept] = replace(after[settled.kept], status=NodeStatus.DISMISSED)
        again = consolidate(after.values())
        for folded in settled.folded:
            assert again.node(folded).duplicate_of == settled.kept
        assert all(
            n.duplicate_of is not None or not n.active
            for n in again.nodes
            if n.id in set(found.node_ids)
        )
