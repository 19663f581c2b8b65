"""Verification panel and completeness critic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.panel import (
    LensVerdict,
    PanelMode,
    PanelStatus,
    coverage_gaps,
    panel_outcome,
    plan_panel,
    unverified_outcome,
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
