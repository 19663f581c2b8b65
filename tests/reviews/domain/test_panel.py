"""Verification panel and completeness critic."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.panel import (
    COST_GUARD_LIMIT,
    FOLLOW_UP_ORDER,
    LENSES,
    PANEL_GROUP_SIZE,
    LensVerdict,
    PanelMode,
    PanelStatus,
    conflicting_severity,
    coverage_gaps,
    excerpt_ranges,
    panel_groups,
    panel_outcome,
    plan_panel,
    unverified_outcome,
    warranted_dimensions,
)
from reviews.domain.types import Dimension, NodeStatus, NodeType, NodeView, Priority, Severity

REAL, FP = LensVerdict.REAL, LensVerdict.FALSE_POSITIVE


def _node(id: str, confidence: float = 0.9, **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id=id,
        agent="impl",
        type=NodeType.BUG,
        priority=Priority.P2,
        confidence=confidence,
        severity=Severity.MEDIUM,
        path="app/x.py",
        start_line=1,
        end_line=1,
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("lens1", "lens2", "lens3", "status", "severity", "confirmations"),
    [
        (FP, FP, Severity.HIGH, PanelStatus.FILTERED, Severity.MEDIUM, 0),
        (REAL, REAL, Severity.CRITICAL, PanelStatus.CONFIRMED, Severity.CRITICAL, 2),
        (REAL, REAL, None, PanelStatus.CONFIRMED, Severity.MEDIUM, 2),
        (REAL, FP, Severity.LOW, PanelStatus.CONTESTED, Severity.MEDIUM, 1),  # tie
        (FP, REAL, Severity.LOW, PanelStatus.CONTESTED, Severity.MEDIUM, 1),  # tie
        (FP, None, Severity.LOW, PanelStatus.CONTESTED, Severity.MEDIUM, 0),  # lens 2 errored
        (None, FP, None, PanelStatus.CONTESTED, Severity.MEDIUM, 0),  # lens 1 errored
        (REAL, None, Severity.HIGH, PanelStatus.CONTESTED, Severity.MEDIUM, 1),
        (None, None, None, PanelStatus.UNVERIFIED, Severity.MEDIUM, 0),  # all abstained
        (None, None, Severity.HIGH, PanelStatus.UNVERIFIED, Severity.MEDIUM, 0),  # lens 3 only
    ],
)
def test_it_applies_the_survival_rule(
    lens1: LensVerdict | None,
    lens2: LensVerdict | None,
    lens3: Severity | None,
    status: PanelStatus,
    severity: Severity,
    confirmations: int,
) -> None:
    """Filtered only on two false-positive votes; ties and one abstention survive as
    contested, no valid verdict as unverified; a confirmed finding takes lens 3's severity;
    each REAL is a peer confirmation."""
    outcome = panel_outcome(
        _node("a"), reachability=lens1, false_positive=lens2, severity_vote=lens3
    )
    assert (outcome.status, outcome.severity, outcome.peer_confirmations) == (
        status,
        severity,
        confirmations,
    )


VERDICTS = st.sampled_from([REAL, FP, None])


@given(VERDICTS, VERDICTS, st.sampled_from([*Severity, None]), st.text(max_size=80))
def test_a_finding_is_unverified_exactly_when_no_lens_gave_a_verdict(
    lens1: LensVerdict | None,
    lens2: LensVerdict | None,
    lens3: Severity | None,
    why: str,
) -> None:
    """Never contested without a single valid verdict; the note carries each abstention."""
    abstentions = {
        lens: f"{lens} said {why}"
        for lens, verdict in (("reachability", lens1), ("false_positive", lens2))
        if verdict is None
    }
    outcome = panel_outcome(
        _node("a"),
        reachability=lens1,
        false_positive=lens2,
        severity_vote=lens3,
        abstentions=abstentions,
    )
    nobody = lens1 is None and lens2 is None
    assert (outcome.status is PanelStatus.UNVERIFIED) is nobody
    if nobody:
        assert outcome.note.startswith("no lens gave a valid verdict")
        assert (outcome.severity, outcome.priority) == (Severity.MEDIUM, Priority.P2)
    if outcome.status in (PanelStatus.UNVERIFIED, PanelStatus.CONTESTED):
        for reason in abstentions.values():
            if reason.strip():
                assert reason in outcome.note


def test_the_unverified_note_names_every_abstention() -> None:
    outcome = panel_outcome(
        _node("a"),
        reachability=None,
        false_positive=None,
        severity_vote=None,
        abstentions={"reachability": "abstained: timed out", "false_positive": "abstained: bad"},
    )
    assert outcome.note == (
        "no lens gave a valid verdict (reachability: abstained: timed out; "
        "false_positive: abstained: bad)"
    )


def test_it_moves_the_priority_with_lens_three_severity() -> None:
    """critical from lens 3 makes a confirmed finding P0."""
    outcome = panel_outcome(
        _node("a"), reachability=REAL, false_positive=REAL, severity_vote=Severity.CRITICAL
    )
    assert outcome.priority is Priority.P0
    assert unverified_outcome(_node("b")).status is PanelStatus.UNVERIFIED


@pytest.mark.parametrize(
    ("filed_as", "vote", "priority", "node_type"),
    [
        (NodeType.RECOMMENDATION, Severity.CRITICAL, Priority.P0, NodeType.BUG),
        (NodeType.SUGGESTION, Severity.HIGH, Priority.P1, NodeType.BUG),
        (NodeType.RECOMMENDATION, Severity.MEDIUM, Priority.P2, None),  # no contradiction
        (NodeType.QUESTION, Severity.CRITICAL, Priority.P2, None),  # not lifted
        (NodeType.BUG, Severity.CRITICAL, Priority.P0, None),
    ],
)
def test_a_lifted_priority_never_contradicts_the_type(filed_as, vote, priority, node_type) -> None:
    """A recommendation lens 3 lifts to P0/P1 becomes a bug; a question keeps its priority."""
    outcome = panel_outcome(
        _node("a", type=filed_as), reachability=REAL, false_positive=REAL, severity_vote=vote
    )
    assert (outcome.priority, outcome.node_type) == (priority, node_type)
    if filed_as is NodeType.QUESTION:
        assert "not lifted to P0: a question is not a defect" in outcome.note
    if node_type is NodeType.BUG:
        assert f"a {filed_as} at {priority} is a bug" in outcome.note


def test_it_admits_confident_canonical_active_findings_only() -> None:
    """Below 0.5, duplicates and closed nodes do not enter the panel."""
    plan = plan_panel(
        [
            _node("a", 0.5),
            _node("b", 0.49),
            _node("c", duplicate_of="a"),
            _node("d", status=NodeStatus.RESOLVED),
        ]
    )
    assert plan.verify == ("a",)
    assert plan.not_entered == ("b", "c", "d")
    assert not plan.narrowed


def test_it_skips_verification_in_fast_mode_and_verifies_all_in_rigorous_mode() -> None:
    """fast → everything unverified; rigorous → everything verified, whatever the count."""
    many = [_node(f"n{i:02d}", 0.9) for i in range(30)]
    fast = plan_panel(many, mode=PanelMode.FAST)
    assert (len(fast.verify), len(fast.unverified)) == (0, 30)
    rigorous = plan_panel(many, mode=PanelMode.RIGOROUS)
    assert (len(rigorous.verify), rigorous.narrowed) == (30, False)


def test_it_narrows_the_panel_above_twenty_five_findings() -> None:
    """Over 25: verify critical/high, the 0.5-0.75 band and conflicting severities only."""
    plain = [_node(f"p{i:02d}", 0.9) for i in range(22)]
    special = [
        _node("high", 0.9, severity=Severity.HIGH),
        _node("p1", 0.9, priority=Priority.P1),
        _node("band", 0.6),
        _node("edge", 0.75),
        _node("conflict", 0.9),
    ]
    plan = plan_panel(plain + special, conflicting_severity={"conflict"})
    assert plan.narrowed
    assert set(plan.verify) == {"high", "p1", "band", "edge", "conflict"}
    assert len(plan.unverified) == 22
    assert not plan_panel(plain[:20] + special).narrowed  # exactly 25: no narrowing


def test_it_lists_coverage_gaps_and_names_one_follow_up() -> None:
    """Missing warranted dimensions, uncited files and uncovered hot-spots; security first."""
    gaps = coverage_gaps(
        warranted={Dimension.QUALITY, Dimension.SECURITY, Dimension.PERFORMANCE},
        ran={Dimension.QUALITY},
        changed_files=["app/x.py", "app/y.py", "app/z.py"],
        nodes=[_node("a")],
        hot_spots={"app/z.py", "app/x.py"},
    )
    assert gaps.missing_dimensions == (Dimension.SECURITY, Dimension.PERFORMANCE)
    assert gaps.uncited_files == ("app/y.py", "app/z.py")
    assert gaps.uncovered_hot_spots == ("app/z.py",)
    assert gaps.follow_up is Dimension.SECURITY
    done = coverage_gaps(
        warranted={Dimension.QUALITY},
        ran={Dimension.QUALITY},
        changed_files=["app/x.py"],
        nodes=[_node("a")],
    )
    assert done.complete and done.follow_up is None


# -- conflicting severity -------------------------------------------------------------------


def test_a_duplicate_rated_otherwise_marks_its_canonical_as_conflicting() -> None:
    """Read from `duplicate_of`: another priority or severity among a canonical's duplicates."""
    nodes = [
        _node("a", priority=Priority.P2, severity=Severity.MEDIUM),
        _node("a2", priority=Priority.P3, severity=Severity.LOW, duplicate_of="a"),
        _node("b", priority=Priority.P2, severity=Severity.MEDIUM),
        _node("b2", priority=Priority.P2, severity=Severity.MEDIUM, duplicate_of="b"),
        _node("c", priority=Priority.P2, severity=Severity.HIGH),
        _node("c2", priority=Priority.P2, severity=Severity.MEDIUM, duplicate_of="c"),
        _node("d"),
    ]
    assert conflicting_severity(nodes) == {"a", "c"}


_ratings = st.tuples(st.sampled_from(list(Priority)), st.sampled_from(list(Severity)))


@st.composite
def _merged_groups(draw: st.DrawFn) -> list[NodeView]:
    """Canonical findings, each with zero or more duplicates rated freely."""
    nodes = []
    for g in range(draw(st.integers(0, 8))):
        priority, severity = draw(_ratings)
        nodes.append(_node(f"g{g}", priority=priority, severity=severity))
        for d, (p, sv) in enumerate(draw(st.lists(_ratings, max_size=3))):
            nodes.append(_node(f"g{g}d{d}", priority=p, severity=sv, duplicate_of=f"g{g}"))
    return nodes


@given(_merged_groups(), st.randoms())
def test_conflicting_severity_is_exactly_the_canonicals_rated_two_ways(nodes, rnd) -> None:
    """Only canonical ids; one iff a duplicate differs from it; the order of nodes is moot."""
    found = conflicting_severity(nodes)
    by_id = {n.id: n for n in nodes}
    expected = {
        n.duplicate_of
        for n in nodes
        if n.duplicate_of is not None
        and (n.priority, n.severity)
        != (by_id[n.duplicate_of].priority, by_id[n.duplicate_of].severity)
    }
    assert found == expected
    assert all(by_id[i].duplicate_of is None for i in found)
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    assert conflicting_severity(shuffled) == found


@given(_merged_groups(), st.integers(COST_GUARD_LIMIT - 5, COST_GUARD_LIMIT + 10))
def test_a_narrowed_panel_always_verifies_the_conflicting_ones(groups, plain) -> None:
    """Above the cost guard, plain low findings pass through unverified, but a canonical whose
    reviewers disagreed on severity is always verified; every entered finding is planned once."""
    nodes = groups + [_node(f"p{i:02d}", 0.9, priority=Priority.P3) for i in range(plain)]
    plan = plan_panel(nodes, conflicting_severity=conflicting_severity(nodes))
    entered = [n for n in nodes if n.duplicate_of is None]
    assert sorted(plan.verify + plan.unverified) == sorted(n.id for n in entered)
    assert conflicting_severity(nodes) <= set(plan.verify)
    if plan.narrowed:
        assert not {f"p{i:02d}" for i in range(plain)} & set(plan.verify)


def test_a_later_pass_plans_only_what_is_not_settled_and_keeps_the_guard() -> None:
    """After a follow-up: settled findings count towards the guard but are not planned again."""
    old = [_node(f"o{i:02d}", 0.9) for i in range(25)]
    new = [_node("new-low", 0.9), _node("new-p0", 0.9, priority=Priority.P0)]
    plan = plan_panel(old + new, settled={n.id for n in old})
    assert plan.narrowed
    assert (plan.verify, plan.unverified) == (("new-p0",), ("new-low",))
    assert plan_panel(old, settled={n.id for n in old}).verify == ()


# -- the critic ---------------------------------------------------------------------------------

_dimensions = st.frozensets(st.sampled_from(list(Dimension)))


@given(
    warranted=_dimensions,
    ran=_dimensions,
    files=st.lists(st.sampled_from(["a.py", "b.py", "c.py", "d.py"]), unique=True),
    hot=st.frozensets(st.sampled_from(["a.py", "b.py", "z.py"])),
)
def test_the_critic_names_at_most_the_first_warranted_missing_dimension(
    warranted, ran, files, hot
) -> None:
    """One follow-up at most: the first of FOLLOW_UP_ORDER warranted and not run; none when
    every warranted dimension ran, however many files went uncited."""
    gaps = coverage_gaps(warranted=warranted, ran=ran, changed_files=files, nodes=[], hot_spots=hot)
    missing = [d for d in FOLLOW_UP_ORDER if d in warranted and d not in ran]
    assert list(gaps.missing_dimensions) == missing
    assert gaps.follow_up == (missing[0] if missing else None)
    if warranted <= ran:
        assert gaps.follow_up is None  # uncited files or hot spots alone never call one


def test_the_warranted_set_joins_the_rules_and_the_model() -> None:
    """Scheduled + security on a high-risk change + what the model judged; never a
    process-blocked dimension, never requirements without the original request."""
    assert warranted_dimensions(scheduled={Dimension.QUALITY}, high_risk=True) == {
        Dimension.QUALITY,
        Dimension.SECURITY,
    }
    judged = warranted_dimensions(
        scheduled={Dimension.QUALITY, Dimension.REQUIREMENTS},
        process_blocked={Dimension.REQUIREMENTS},
        judged={Dimension.PERFORMANCE, Dimension.REQUIREMENTS},
    )
    assert judged == {Dimension.QUALITY, Dimension.PERFORMANCE}
    assert (
        warranted_dimensions(scheduled=(), judged={Dimension.REQUIREMENTS}, request_known=False)
        == frozenset()
    )
    # An abstention (None) leaves the rules' set.
    assert warranted_dimensions(scheduled={Dimension.QUALITY}, judged=None) == {Dimension.QUALITY}


# -- groups and the analyzer's rule ---------------------------------------------------------


@given(st.integers(min_value=0, max_value=60), st.integers(min_value=1, max_value=12))
def test_groups_cover_every_finding_once_in_order_and_as_even_as_they_come(
    count: int, size: int
) -> None:
    ids = [str(i) for i in range(count)]
    groups = panel_groups(ids, size)
    assert [i for group in groups for i in group] == ids
    assert all(1 <= len(group) <= size for group in groups)
    assert len(groups) == -(-count // size)  # no more calls than the cap needs
    if groups:
        assert max(map(len, groups)) - min(map(len, groups)) <= 1


def test_a_thorough_round_is_one_or_two_groups() -> None:
    assert [len(g) for g in panel_groups([str(i) for i in range(8)])] == [8]
    assert [len(g) for g in panel_groups([str(i) for i in range(10)])] == [5, 5]
    assert PANEL_GROUP_SIZE == 8


def _rule(id: str, **kw: object) -> NodeView:
    return _node(id, agent="bandit", analyzer_rule="B602", **kw)


def test_an_analyzers_finding_skips_lens_one_unless_rated_otherwise() -> None:
    nodes = [_node("1"), _rule("2"), _rule("3")]
    plan = plan_panel(nodes, conflicting_severity={"3"})
    assert plan.verify == ("1", "2", "3")
    assert plan.rule_reachable == ("2",)
    assert plan.lenses("2") == ("false_positive", "severity")
    assert plan.lenses("1") == plan.lenses("3") == LENSES


@pytest.mark.parametrize(
    ("lens2", "status", "confirmations"),
    [
        (REAL, PanelStatus.CONFIRMED, 1),
        (FP, PanelStatus.CONTESTED, 0),  # never filtered on one lens's word
        (None, PanelStatus.UNVERIFIED, 0),  # the rule alone is no verdict
    ],
)
def test_the_rule_stands_for_lens_one_only_beside_lens_two(
    lens2: LensVerdict | None, status: PanelStatus, confirmations: int
) -> None:
    outcome = panel_outcome(
        _rule("a"),
        reachability=None,
        false_positive=lens2,
        severity_vote=Severity.CRITICAL,
        abstentions={"false_positive": "abstained: timed out"} if lens2 is None else {},
        rule="B602",
    )
    assert (outcome.status, outcome.peer_confirmations) == (status, confirmations)
    assert outcome.note.endswith(
        "reachability not asked of a model: the analyzer's rule B602 matched"
    )
    if lens2 is None:
        assert "false_positive: abstained: timed out" in outcome.note
    if status is PanelStatus.CONFIRMED:
        assert outcome.severity is Severity.CRITICAL


@given(VERDICTS, st.sampled_from([*Severity, None]))
def test_with_the_rule_lens_ones_own_answer_is_never_read(
    lens1: LensVerdict | None, lens3: Severity | None
) -> None:
    """Whatever sits in lens 1's place, the rule decides it: lens 2 alone moves the outcome."""
    for lens2 in (REAL, FP, None):
        a = panel_outcome(
            _rule("a"), reachability=lens1, false_positive=lens2, severity_vote=lens3, rule="B1"
        )
        b = panel_outcome(
            _rule("a"), reachability=None, false_positive=lens2, severity_vote=lens3, rule="B1"
        )
        assert a == b


# -- the code a lens is shown ------------------------------------------------------------------

SPANS = st.lists(
    st.tuples(st.integers(-3, 130), st.integers(0, 40)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=8,
)


@given(spans=SPANS, total=st.integers(0, 120), context=st.integers(0, 12))
def test_excerpt_ranges_show_every_cited_line_once_in_file_order(spans, total, context) -> None:
    ranges = excerpt_ranges(spans, total, context)
    shown = [line for lo, hi in ranges for line in range(lo, hi + 1)]
    # Each line once, in order, inside the file, ranges apart (else they would be one).
    assert shown == sorted(set(shown)) and all(1 <= line <= total for line in shown)
    assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(ranges))
    for start, end in spans:
        if 1 <= start <= total:
            wanted = range(max(start - context, 1), min(end + context, total) + 1)
            assert set(wanted) <= set(shown)


def test_findings_in_one_file_share_its_excerpt() -> None:
    """Five findings in a 20-line file: the file once; far apart, two ranges."""
    assert excerpt_ranges([(7, 7), (3, 3), (18, 18), (19, 20), (12, 12)], 20) == ((1, 20),)
    assert excerpt_ranges([(5, 5), (80, 81)], 100, 10) == ((1, 15), (70, 91))
