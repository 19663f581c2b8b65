"""The matching rule of the lead pass across streams, and the merge's properties."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.dedup import consolidate
from reviews.domain.matching import (
    COMMAND_INJECTION,
    CREDENTIAL,
    SQL_INJECTION,
    SWALLOWED,
    same_defect,
    same_issue,
    text_classes,
)
from reviews.domain.types import Category, NodeStatus, NodeType, NodeView, Priority, Severity


def _node(id: str, agent: str = "implementation", **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id=id,
        agent=agent,
        type=NodeType.BUG,
        priority=Priority.P2,
        confidence=0.7,
        category=Category.SECURITY,
        severity=Severity.MEDIUM,
        path="shop/search.py",
        start_line=12,
        end_line=12,
        title="",
        body="",
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


BANDIT_SQL = dict(
    title="B608: Possible SQL injection vector through string-based query construction.",
    body="bandit `B608` (hardcoded_sql_expressions): Possible SQL injection vector (CWE-89)",
)


def test_a_model_sql_finding_and_bandit_b608_on_the_same_line_are_one_issue() -> None:
    model = _node("1", title="SQL query built from the search term", priority=Priority.P0)
    bandit = _node("2", "bandit", **BANDIT_SQL)
    assert same_defect(model, bandit)
    result = consolidate([model, bandit])
    assert [n.id for n in result.canonical] == ["1"]
    canonical = result.node("1")
    assert canonical.priority is Priority.P0
    assert canonical.reviewers == ("implementation", "bandit")
    assert canonical.body == BANDIT_SQL["body"]  # the most detailed text
    assert result.node("2").duplicate_of == "1"


def test_rule_families_cwes_and_words_name_the_same_classes() -> None:
    assert SQL_INJECTION in text_classes("S608 Possible SQL injection")
    assert text_classes("see CWE-89") == {SQL_INJECTION}
    assert COMMAND_INJECTION in text_classes("B602: subprocess call with shell=True identified")
    assert CREDENTIAL in text_classes("Credential committed in code (api key)")
    assert CREDENTIAL in text_classes("B105: Possible hardcoded password: '[REDACTED]'")
    assert SWALLOWED in text_classes("E722: Do not use bare `except`")
    assert SWALLOWED in text_classes("B110: Try, Except, Pass detected.")
    assert SWALLOWED in text_classes("The exception is swallowed")
    # Named classes, and the subjects a text mentions (matched only beside an analyzer's class).
    assert text_classes("B404: Consider the subprocess module") == {
        "rule:B404",
        "subject:" + COMMAND_INJECTION,
    }
    assert text_classes("Name the export target explicitly") == frozenset()


def test_different_defects_on_the_same_line_stay_apart() -> None:
    shell = _node("1", "bandit", title="B602: subprocess call with shell=True identified")
    swallowed = _node("2", "bandit", title="B110: Try, Except, Pass detected.")
    sql = _node("3", title="SQL injection in search")
    assert not same_defect(shell, swallowed)
    assert not same_defect(shell, sql)
    # The same class on lines that do not overlap is a cross-reference, not a merge.
    assert not same_defect(sql, _node("4", "bandit", **BANDIT_SQL, start_line=30, end_line=30))


def test_a_merged_body_never_widens_what_the_canonical_matches() -> None:
    """The canonical takes a duplicate's longer body; its classes stay frozen, so a second pass
    merges nothing more."""
    canonical = _node("1", title="Shell command from user input", start_line=18, end_line=18)
    dup = _node(
        "2", "security", title="Command injection in export", body="Also a pickle load. " * 5
    )
    pickle = _node("3", "bandit", title="B301: pickle load", start_line=18, end_line=19)
    once = consolidate([canonical, dup, pickle])
    assert consolidate(once.nodes) == once


def test_an_active_duplicate_of_a_closed_canonical_stays_with_it() -> None:
    closed = _node("1", title="SQL injection", status=NodeStatus.DISMISSED)
    dup = _node("2", "bandit", **BANDIT_SQL, duplicate_of="1")
    result = consolidate([closed, dup])
    assert result.node("2").duplicate_of == "1" and result.canonical == (result.node("1"),)


# -- properties ----------------------------------------------------------------------------

TEXTS = [
    ("SQL query built from the search term", ""),
    ("SQL injection in search", "Use a parameter."),
    (BANDIT_SQL["title"], BANDIT_SQL["body"]),
    ("B110: Try, Except, Pass detected.", "bandit `B110` (CWE-703)"),
    ("The exception is swallowed", "A longer body: the error is lost and pickle loads it."),
    ("Credential committed in code (api key)", ""),
    ("Off-by-one in pagination", "short"),
    ("pagination off by one", "a much longer body text"),
    ("42", ""),
]

node_lists = st.lists(
    st.builds(
        lambda i, agent, p, conf, cat, text, start, length, fix, status, dup: _node(
            f"n{i:02d}",
            agent,
            priority=p,
            confidence=conf,
            category=cat,
            title=text[0],
            body=text[1],
            path=None if start == 0 else "shop/search.py",
            start_line=start or None,
            end_line=(start + length) if start else None,
            replacement_lines=fix,
            status=status,
            duplicate_of=None if dup is None else f"n{dup:02d}",
        ),
        st.integers(0, 30),
        st.sampled_from(["implementation", "security", "bandit", "ruff", "ci"]),
        st.sampled_from(list(Priority)),
        st.sampled_from([0.4, 0.7, 0.9]),
        st.sampled_from([Category.SECURITY, Category.CORRECTNESS, Category.STABILITY]),
        st.sampled_from(TEXTS),
        st.integers(0, 6),
        st.integers(0, 3),
        st.sampled_from([None, None, ("q(x)",), ("r(x)",)]),
        st.sampled_from([NodeStatus.OPEN, NodeStatus.OPEN, NodeStatus.RESOLVED]),
        st.one_of(st.none(), st.integers(0, 30)),
    ),
    max_size=10,
    unique_by=lambda n: n.id,
)


@settings(max_examples=200, deadline=None)
@given(node_lists)
def test_merge_is_idempotent(nodes: list[NodeView]) -> None:
    once = consolidate(nodes)
    assert consolidate(once.nodes) == once


@settings(max_examples=200, deadline=None)
@given(node_lists, st.randoms(use_true_random=False))
def test_merge_is_order_independent(nodes: list[NodeView], rnd) -> None:
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    assert consolidate(shuffled) == consolidate(nodes)


@settings(max_examples=200, deadline=None)
@given(node_lists)
def test_merge_loses_nothing_and_never_lowers_a_priority(nodes: list[NodeView]) -> None:
    """Every input node comes out, canonical or demoted to exactly one canonical node, which
    credits its reviewer and is at least as severe as it was."""
    result = consolidate(nodes)
    assert sorted(n.id for n in result.nodes) == sorted(n.id for n in nodes)
    before = {n.id: n for n in nodes}
    by_id = {n.id: n for n in result.nodes}
    for node in result.nodes:
        if not node.active:
            assert node == before[node.id]  # closed findings pass through
            continue
        assert node.priority.rank <= before[node.id].priority.rank
        if node.duplicate_of is None:
            continue
        canonical = by_id[node.duplicate_of]
        assert canonical.duplicate_of is None
        if canonical.active:
            assert canonical.priority.rank <= before[node.id].priority.rank
            assert node.agent in canonical.reviewers


def test_a_terse_model_finding_beside_an_analyzers_on_the_same_line_is_one_issue() -> None:
    """ "sql issue" names no class; beside bandit's B608 on the same line, of the same type, it
    speaks of that defect. Two reviewers' words about a subject alone are not enough."""
    analyzer = _node(
        "b608",
        agent="bandit",
        title="B608: Possible SQL injection vector through string-based query construction.",
        body="bandit `B608` (hardcoded_sql_expressions) (CWE-89)",
        analyzer_rule="B608",
    )
    terse = _node("model", title="sql issue", body="This looks wrong.")
    assert same_defect(analyzer, terse) and same_defect(terse, analyzer)
    # A different type is a different statement about the line.
    advice = replace(terse, type=NodeType.RECOMMENDATION)
    assert not same_defect(analyzer, advice)
    # Two model findings that merely mention SQL stay apart (other categories: no title match).
    other = _node(
        "model2", agent="security", category=Category.OTHER, title="query helper", body="query"
    )
    assert not same_issue(terse, other)
