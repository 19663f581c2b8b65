"""The finaliser: Ship / Hold / Block and its confidence."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.types import AxisName, AxisResult, NodeStatus, NodeType, NodeView, Priority
from reviews.domain.types import VerdictLevel as V
from reviews.domain.verdict import counted_nodes, finalise, node_verdict, spread_confidence


def _node(id: str, priority: Priority, confidence: float = 0.9, **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id=id,
        agent="impl",
        title=f"Finding {id}",
        type=NodeType.BUG,
        priority=priority,
        confidence=confidence,
        path="reviews/auth.py",
        start_line=42,
        end_line=42,
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("nodes", "level", "rule"),
    [
        ([], V.SHIP, "no open P0 or P1 finding"),
        ([_node("a", Priority.P2), _node("b", Priority.P3)], V.SHIP, "no open P0 or P1"),
        ([_node("a", Priority.P1)], V.HOLD, "P1: Finding a (reviews/auth.py:42)"),
        ([_node("a", Priority.P0, 0.69)], V.HOLD, "P0 at 0.69 (below 0.7): Finding a"),
        ([_node("a", Priority.P0, 0.82)], V.BLOCK, "P0 at 0.82: Finding a (reviews/auth.py:42)"),
        ([_node("a", Priority.P0, 0.7), _node("b", Priority.P1)], V.BLOCK, "P0 at 0.70"),
        (
            [
                _node("a", Priority.P0, 0.75),
                _node("b", Priority.P0, 0.95, start_line=7, end_line=9),
            ],
            V.BLOCK,
            "P0 at 0.95: Finding b (reviews/auth.py:7-9) (and 1 more finding)",
        ),
    ],
)
def test_it_applies_the_verdict_rules(nodes: list[NodeView], level: V, rule: str) -> None:
    """P0 ≥ 0.7 blocks, any other P0 or a P1 holds, the rest ships; the rule is named."""
    verdict = node_verdict(nodes)
    assert verdict.level is level
    assert rule in verdict.rule


def test_it_counts_only_open_and_consensus_ready_nodes() -> None:
    """Resolved and dismissed nodes no longer count."""
    nodes = [
        _node("a", Priority.P0, status=NodeStatus.DISMISSED),
        _node("b", Priority.P1, status=NodeStatus.RESOLVED),
        _node("c", Priority.P1, status=NodeStatus.CONSENSUS_READY),
    ]
    assert node_verdict(nodes).contributing == ("c",)


def test_it_counts_a_duplicate_only_through_its_canonical_node() -> None:
    """A demoted duplicate never decides; a dangling duplicate still counts on its own."""
    canonical = _node("a", Priority.P1, status=NodeStatus.DISMISSED)
    duplicate = _node("b", Priority.P0, duplicate_of="a")
    assert node_verdict([canonical, duplicate]).level is V.SHIP
    assert [n.id for n in counted_nodes([duplicate])] == ["b"]


def test_it_derives_confidence_from_the_spread_of_contributing_confidences() -> None:
    """Agreement keeps the mean; divergence lowers it; no contributor means 1.0."""
    assert spread_confidence([]) == 1.0
    assert spread_confidence([0.8]) == 0.8
    assert spread_confidence([0.8, 0.8]) == 0.8
    assert spread_confidence([0.7, 0.9]) == pytest.approx(0.8 * 0.9)
    assert spread_confidence([0.7, 0.9]) < spread_confidence([0.8, 0.8])
    blocked = node_verdict([_node("a", Priority.P0, 0.8), _node("b", Priority.P0, 1.0)])
    assert blocked.confidence == pytest.approx(0.9 * 0.9)


@pytest.mark.parametrize(
    ("result", "level", "rule"),
    [
        (AxisResult.FAIL, V.BLOCK, "gated axis apiContract failed"),
        (AxisResult.PARTIAL, V.HOLD, "gated axis apiContract is partial"),
        (AxisResult.UNAVAILABLE, V.HOLD, "gated axis apiContract is unavailable"),
        (AxisResult.WARN, V.SHIP, "no open P0 or P1 finding"),
        (AxisResult.PASS, V.SHIP, "no open P0 or P1 finding"),
    ],
)
def test_it_lets_gated_axes_tighten_the_verdict(result: AxisResult, level: V, rule: str) -> None:
    """fail → Block, partial/unavailable → at least Hold, pass/warn clear the gate. A level
    forced by missing data says what would clear it and states no confidence (never 1.00)."""
    verdict = finalise([], axes={AxisName.API_CONTRACT: result}, gated={AxisName.API_CONTRACT})
    assert verdict.level is level and verdict.rule.startswith(rule)
    if result in (AxisResult.PARTIAL, AxisResult.UNAVAILABLE):
        assert verdict.rule.endswith(": submit it from CI or un-gate it in settings")
        assert verdict.confidence is None
    else:
        assert verdict.confidence == 1.0


def test_it_treats_a_missing_gated_axis_as_unavailable_and_ignores_ungated_ones() -> None:
    """No evidence never turns a gate green; an ungated failure is advice only."""
    assert finalise([], axes={}, gated={AxisName.VISUAL}).level is V.HOLD
    assert finalise([], axes={AxisName.VISUAL: AxisResult.FAIL}, gated=()).level is V.SHIP


def test_it_never_gates_on_token_axes() -> None:
    """Token axes are advisory even when a setting lists them as gated."""
    axes = {AxisName.SECURITY: AxisResult.FAIL, AxisName.TEST_GAP: AxisResult.UNAVAILABLE}
    assert finalise([], axes=axes, gated=set(axes)).level is V.SHIP


def test_it_never_loosens_a_verdict_through_axes() -> None:
    """A Block from nodes stays Block when an axis only asks for Hold."""
    nodes = [_node("a", Priority.P0, 0.9)]
    verdict = finalise(nodes, axes={AxisName.VISUAL: AxisResult.PARTIAL}, gated={AxisName.VISUAL})
    assert verdict.level is V.BLOCK
    assert "P0 at 0.90" in verdict.rule


nodes_strategy = st.lists(
    st.builds(
        lambda i, p, c, s: _node(f"n{i}", p, c, status=s),
        st.integers(0, 50),
        st.sampled_from(list(Priority)),
        st.floats(0, 1),
        st.sampled_from(list(NodeStatus)),
    ),
    max_size=6,
    unique_by=lambda n: n.id,
)
axes_strategy = st.dictionaries(st.sampled_from(list(AxisName)), st.sampled_from(list(AxisResult)))
gated_strategy = st.sets(st.sampled_from(list(AxisName)))


@settings(max_examples=150, deadline=None)
@given(
    nodes_strategy,
    axes_strategy,
    gated_strategy,
    st.sampled_from([Priority.P2, Priority.P3]),
    st.floats(0, 1),
)
def test_it_is_never_made_stricter_by_a_p2_or_p3_node(
    nodes: list[NodeView], axes: dict, gated: set, priority: Priority, confidence: float
) -> None:
    """Adding a minor node never raises the verdict (and never lowers it either)."""
    before = finalise(nodes, axes=axes, gated=gated)
    after = finalise([*nodes, _node("extra", priority, confidence)], axes=axes, gated=gated)
    assert after.level is before.level


@settings(max_examples=150, deadline=None)
@given(
    nodes_strategy,
    axes_strategy,
    gated_strategy,
    st.sampled_from([AxisName.VISUAL, AxisName.API_CONTRACT, AxisName.PERFORMANCE]),
)
def test_it_always_blocks_on_a_gated_failing_axis(
    nodes: list[NodeView], axes: dict, gated: set, axis: AxisName
) -> None:
    """Whatever the nodes, a gated deterministic axis that failed yields Block."""
    verdict = finalise(nodes, axes={**axes, axis: AxisResult.FAIL}, gated={*gated, axis})
    assert verdict.level is V.BLOCK


@settings(max_examples=150, deadline=None)
@given(
    nodes_strategy,
    axes_strategy,
    gated_strategy,
    st.sampled_from([AxisResult.PASS, AxisResult.WARN, AxisResult.PARTIAL, AxisResult.UNAVAILABLE]),
)
def test_it_is_never_made_stricter_by_removing_an_axis_failure(
    nodes: list[NodeView], axes: dict, gated: set, replacement: AxisResult
) -> None:
    """Turning a failed axis into any other result never makes the verdict stricter."""
    failed = [a for a, r in axes.items() if r is AxisResult.FAIL]
    before = finalise(nodes, axes=axes, gated=gated)
    for axis in failed:
        after = finalise(nodes, axes={**axes, axis: replacement}, gated=gated)
        assert after.level.strictness <= before.level.strictness
        ungated = finalise(nodes, axes={**axes, axis: replacement}, gated=gated - {axis})
        assert ungated.level.strictness <= before.level.strictness


@settings(max_examples=100, deadline=None)
@given(nodes_strategy, axes_strategy, gated_strategy)
def test_it_only_tightens_through_axes_and_keeps_confidence_in_range(
    nodes: list[NodeView], axes: dict, gated: set
) -> None:
    """Axes never make a verdict more lenient than the nodes alone; confidence ∈ [0, 1], or
    None exactly when a gated axis without evidence forced the level."""
    verdict = finalise(nodes, axes=axes, gated=gated)
    assert verdict.level.strictness >= node_verdict(nodes).level.strictness
    if verdict.confidence is None:
        assert verdict.level is V.HOLD and "un-gate" in verdict.rule
    else:
        assert 0.0 <= verdict.confidence <= 1.0


def test_it_ignores_a_self_confirmation_and_names_peer_confirmers() -> None:
    """The finaliser's own check: the author's confirmation counts for nothing; a peer's and a
    person's are named in the rule (a person by role, never by id)."""
    self_confirmed = _node("a", Priority.P0, 0.9, confirmed_by=("impl",))
    assert "confirmed" not in finalise([self_confirmed]).rule
    peer = _node("a", Priority.P0, 0.9, confirmed_by=("impl", "security", "person:7"))
    assert finalise([peer]).rule.endswith(", confirmed by a person, security")
    # The panel's lenses are counted as verifiers: their names are internal.
    lenses = ("lens-reachability", "lens-false_positive", "person:7")
    verified = _node("a", Priority.P0, 0.9, confirmed_by=lenses)
    assert finalise([verified]).rule.endswith(", confirmed by 2 verifiers, a person")
    assert "lens" not in finalise([verified]).rule


@settings(max_examples=150, deadline=None)
@given(nodes_strategy, st.sets(st.sampled_from(["impl", "security", "person:1"])))
def test_only_peer_confirmations_change_what_the_finaliser_says(
    nodes: list[NodeView], confirmers: set[str]
) -> None:
    """Adding the author's own confirmation to every node changes nothing at all."""
    with_self = [replace(n, confirmed_by=(*n.confirmed_by, n.agent)) for n in nodes]
    assert finalise(with_self) == finalise(nodes)
    peers = confirmers - {"impl"}
    confirmed = [replace(n, confirmed_by=tuple(confirmers)) for n in nodes]
    verdict = finalise(confirmed)
    assert verdict.level is finalise(nodes).level
    assert ("confirmed by" in verdict.rule) == bool(peers and verdict.contributing)


# -- analyzer findings: a pattern match holds, it blocks only when backed ----------------------

_ANALYZER = dict(agent="bandit", analyzer_rule="B324", title="B324: weak SHA1 hash")


def test_an_unconfirmed_analyzer_p0_holds_and_says_why() -> None:
    verdict = node_verdict([_node("a", Priority.P0, 0.9, **_ANALYZER)])
    assert verdict.level is V.HOLD
    assert verdict.rule.startswith("unconfirmed analyzer finding (B324) — P0 at 0.90")
    assert "not blocking until a reviewer confirms it" in verdict.rule


@pytest.mark.parametrize(
    "backing",
    [
        {"confirmed_by": ("lens-reachability",)},
        {"confirmed_by": ("person:7",)},
        {"credited_agents": ("security",)},  # a model reviewer reported it too
        {"high_precision": True},
    ],
)
def test_an_analyzer_p0_blocks_once_backed(backing: dict[str, object]) -> None:
    verdict = node_verdict([_node("a", Priority.P0, 0.9, **{**_ANALYZER, **backing})])
    assert verdict.level is V.BLOCK and "unconfirmed" not in verdict.rule


def test_other_analyzers_do_not_back_each_other() -> None:
    """The secret scanner reporting the same line as bandit is still only pattern matching."""
    node = _node("a", Priority.P0, 0.9, **_ANALYZER, credited_agents=("secrets", "ruff"))
    assert node_verdict([node]).level is V.HOLD


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(Priority)),
            st.floats(0, 1),
            st.booleans(),  # analyzer-authored
            st.booleans(),  # high precision
            st.sampled_from([(), ("lens-severity",), ("ruff",), ("person:1",)]),
        ),
        max_size=8,
    )
)
def test_only_backed_findings_block(rows: list[tuple]) -> None:
    """Property: Block needs a P0 ≥ 0.7 that is not an unconfirmed pattern match; removing
    every analyzer flag never makes the verdict more lenient."""
    nodes = [
        _node(
            str(i),
            priority,
            confidence,
            agent="bandit" if analyzer else "security",
            analyzer_rule="B1" if analyzer else None,
            high_precision=precise,
            confirmed_by=confirmers,
        )
        for i, (priority, confidence, analyzer, precise, confirmers) in enumerate(rows)
    ]
    verdict = node_verdict(nodes)
    backed = [
        n
        for n in nodes
        if n.priority is Priority.P0
        and n.confidence >= 0.7
        and (n.analyzer_rule is None or n.high_precision or set(n.confirmed_by) - {"ruff"})
    ]
    assert (verdict.level is V.BLOCK) == bool(backed)
    plain = node_verdict([replace(n, analyzer_rule=None) for n in nodes])
    assert plain.level.strictness >= verdict.level.strictness


@settings(max_examples=150, deadline=None)
@given(nodes_strategy, axes_strategy, gated_strategy, st.text(min_size=1, max_size=200))
def test_an_off_target_change_always_blocks_and_says_why(
    nodes: list[NodeView], axes: dict, gated: set, reason: str
) -> None:
    """Whatever the findings and axes, a change the requirements reviewer judged off target is
    a Block whose rule names the reason; no judgement leaves the verdict as it was."""
    verdict = finalise(nodes, axes=axes, gated=gated, off_target=reason)
    if reason.strip():
        assert verdict.level is V.BLOCK
        assert verdict.rule == "implementation off-target: " + " ".join(reason.split())
    else:  # blank is no judgement
        assert verdict == finalise(nodes, axes=axes, gated=gated)


def test_the_off_target_rule_reads_as_a_reason() -> None:
    verdict = finalise(
        [_node("a", Priority.P3)], off_target="it adds a product import, the request asks export"
    )
    assert (verdict.level, verdict.rule, verdict.confidence) == (
        V.BLOCK,
        "implementation off-target: it adds a product import, the request asks export",
        1.0,
    )
