"""Precision per reviewer and per rule from people's decisions, and calibrated confidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reviews.domain.reviewer_precision import (
    CALIBRATION_PRIOR,
    DROP_WINDOW,
    MIN_CALIBRATION_DECISIONS,
    MIN_DROP_DECISIONS,
    Calibration,
    Decision,
    FindingFacts,
    Outcome,
    Precision,
    RoundFacts,
    calibration,
    decisions,
    is_fixed,
    outcome,
    pooled,
    precision_drop,
    recent,
    reviewer_figures,
    successors,
    wilson_interval,
    with_calibrated,
)
from reviews.domain.types import NodeStatus, NodeType, NodeView, Priority

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


# -- the Wilson interval -----------------------------------------------------------------------

counts = st.integers(1, 5_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@given(counts)
def test_the_interval_holds_the_point_estimate_and_lies_in_0_1(kept_total):
    kept, total = kept_total
    low, high = wilson_interval(kept, total)
    assert 0.0 <= low <= kept / total <= high <= 1.0


@given(counts, st.integers(2, 50))
def test_the_interval_narrows_with_more_data_at_the_same_precision(kept_total, factor):
    kept, total = kept_total
    low, high = wilson_interval(kept, total)
    more_low, more_high = wilson_interval(kept * factor, total * factor)
    assert more_high - more_low < high - low


def test_the_interval_equals_hand_computed_values():
    # p = 6/8, z = 1.96: centre (p + z²/2n) / (1 + z²/n) = 0.6689, half-width 0.2596.
    assert wilson_interval(6, 8) == pytest.approx((0.4093, 0.9285), abs=1e-4)
    assert wilson_interval(0, 4) == pytest.approx((0.0, 0.4899), abs=1e-4)
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)  # nothing decided: nothing known


def test_precision_in_words():
    assert Precision(6, 2).words() == "0.75 (6 of 8 kept; 95% interval 0.41–0.93)"
    assert Precision().words() == "no decisions yet" and Precision().value is None


# -- labels ------------------------------------------------------------------------------------


def finding(fid: int = 1, **kw) -> FindingFacts:
    values = {
        "id": fid,
        "round": 1,
        "reviewer": "implementation",
        "rule": "security",
        "confidence": 0.9,
        "status": NodeStatus.OPEN,
        "path": "shop/search.py",
        "category": "security",
        "title": "SQL query built from the search term",
        "fingerprint": f"fp{fid}",
        **kw,
    }
    return FindingFacts(**values)


@pytest.mark.parametrize(
    ("facts", "fixed", "expected"),
    [
        ({"status": NodeStatus.RESOLVED, "decided_at": at(5)}, False, Outcome.RESOLVED),
        ({"status": NodeStatus.DISMISSED, "decided_at": at(5), "reason": True}, True, "dismissed"),
        # A dismissal without a reason, or the panel's (no person), says nothing.
        ({"status": NodeStatus.DISMISSED, "decided_at": at(5)}, False, None),
        ({"status": NodeStatus.DISMISSED, "reason": True}, False, None),
        # Dismissal memory folded it under an earlier decision: counted once, where made.
        (
            {"status": NodeStatus.DISMISSED, "decided_at": at(5), "reason": True, "credited": True},
            False,
            None,
        ),
        ({"confirmed_at": at(3)}, False, Outcome.CONFIRMED),
        ({"status": NodeStatus.CONSENSUS_READY, "upheld_at": at(4)}, False, Outcome.UPHELD),
        ({}, True, Outcome.FIXED),
        ({}, False, None),  # nobody decided
        ({"canonical": False, "confirmed_at": at(3)}, False, None),  # decided with its canonical
    ],
)
def test_what_counts_as_kept_and_as_wrong(facts, fixed, expected):
    assert outcome(finding(**facts), fixed=fixed) == (Outcome(expected) if expected else None)


def rnd(rid: int, number: int, head: str, *, state="finished", files=None, space=1) -> RoundFacts:
    return RoundFacts(
        id=rid,
        space=space,
        number=number,
        state=state,
        head=head,
        at=at(100 * number),
        files={"shop/search.py": f"key-{head}"} if files is None else files,
    )


def test_a_rounds_successor_is_the_next_finished_round_of_another_head():
    rounds = [
        rnd(1, 1, "a"),
        rnd(2, 2, "a"),  # a re-run of the same head takes the first's place
        rnd(3, 3, "b", state="superseded"),  # never finished: not a successor, no successor
        rnd(4, 4, "c"),
        rnd(5, 5, "d"),
        rnd(9, 1, "a", space=2),
    ]
    assert {k: v.id for k, v in successors(rounds).items()} == {2: 4, 4: 5}


def test_a_finding_is_fixed_only_when_its_file_changed_and_it_is_not_seen_again():
    before, after = rnd(1, 1, "a"), rnd(2, 2, "b")
    gone = finding()
    assert is_fixed(gone, before, after, set())
    # Seen again: by fingerprint, or by file, category and title words (the line was edited).
    assert not is_fixed(gone, before, after, {"fp:fp1"})
    again = finding(2, fingerprint="other", title="sql QUERY built from search term!")
    assert not is_fixed(gone, before, after, set(decisions_keys(again)))
    # Its file did not change: the reviewer just did not say it again.
    assert not is_fixed(gone, before, rnd(2, 2, "b", files={"shop/search.py": "key-a"}), set())
    # The push changed a file the change had not touched: that counts (the key appears).
    elsewhere = finding(path="shop/views.py")
    assert is_fixed(
        elsewhere,
        before,
        rnd(2, 2, "b", files={"shop/views.py": "k", "shop/search.py": "x"}),
        set(),
    )
    # Unanchored, or rounds that recorded no files: nothing to tell.
    assert not is_fixed(finding(path=None), before, after, set())
    assert not is_fixed(gone, rnd(1, 1, "a", files={}), rnd(2, 2, "b", files={}), set())


def decisions_keys(f: FindingFacts) -> frozenset[str]:
    from reviews.domain.reviewer_precision import sameness_keys

    return sameness_keys(f)


def test_decisions_over_rounds_label_each_finding_once():
    rounds = [
        rnd(1, 1, "a"),
        rnd(2, 2, "b", state="superseded"),
        rnd(3, 3, "c"),
    ]
    findings = [
        # Round 1: the SQL finding nobody decided, gone in round 3 (its file changed): fixed.
        finding(1),
        # The same reviewer's finding still there in round 3 (same fingerprint): not counted in
        # round 1, dismissed with a reason in round 3: wrong.
        finding(2, rule="correctness", category="correctness", title="Swallowed error"),
        finding(
            3,
            round=3,
            rule="correctness",
            category="correctness",
            title="Swallowed error",
            fingerprint="fp2",
            status=NodeStatus.DISMISSED,
            decided_at=at(400),
            reason=True,
        ),
        # The superseded round's findings count by their decisions only.
        finding(
            4,
            round=2,
            reviewer="bandit",
            rule="B602",
            status=NodeStatus.RESOLVED,
            decided_at=at(250),
        ),
        finding(5, round=2, reviewer="bandit", rule="B404", fingerprint="gone-too"),
        # A duplicate is decided with its canonical finding.
        finding(
            6,
            round=3,
            reviewer="bandit",
            rule="B110",
            title="Try, Except, Pass detected",
            canonical=False,
            confirmed_at=at(1),
        ),
    ]
    got = sorted(decisions(findings, rounds), key=lambda d: d.finding)
    assert [(d.finding, d.reviewer, d.rule, d.outcome, d.at) for d in got] == [
        (1, "implementation", "security", Outcome.FIXED, at(300)),
        (3, "implementation", "correctness", Outcome.DISMISSED, at(400)),
        (4, "bandit", "B602", Outcome.RESOLVED, at(250)),
    ]


# -- figures -----------------------------------------------------------------------------------


def dec(reviewer: str, rule: str, kept: bool, minute: int, confidence: float = 0.8) -> Decision:
    return Decision(
        reviewer=reviewer,
        rule=rule,
        confidence=confidence,
        outcome=Outcome.RESOLVED if kept else Outcome.DISMISSED,
        at=at(minute),
        finding=minute,
    )


def test_precision_per_reviewer_and_per_rule_equals_hand_computed_values():
    items = [
        dec("bandit", "B608", True, 1),
        dec("bandit", "B608", True, 2),
        dec("bandit", "B608", False, 3),
        dec("bandit", "B404", False, 4),
        dec("implementation", "security", True, 5),
        dec("implementation", "correctness", False, 6),
        dec("implementation", "security", True, 7),
    ]
    bandit, implementation = reviewer_figures(items)
    assert (bandit.reviewer, bandit.precision) == ("bandit", Precision(kept=2, dismissed=2))
    assert bandit.precision.value == 0.5
    assert [(r.rule, r.precision.value) for r in bandit.rules] == [("B608", 2 / 3), ("B404", 0.0)]
    assert implementation.precision.value == pytest.approx(2 / 3)
    assert [(r.rule, r.precision.kept, r.precision.decisions) for r in implementation.rules] == [
        ("security", 2, 2),
        ("correctness", 0, 1),
    ]
    assert bandit.outcomes == {Outcome.RESOLVED: 2, Outcome.DISMISSED: 2}
    # Over each reviewer's last two decisions only.
    bandit, implementation = reviewer_figures(items, last=2)
    assert bandit.precision == Precision(kept=0, dismissed=2)  # minutes 3 and 4
    assert implementation.precision == Precision(kept=1, dismissed=1)  # minutes 6 and 7


@given(st.lists(st.tuples(st.integers(0, 500), st.booleans()), max_size=40), st.integers(0, 50))
def test_last_n_keeps_the_newest(raw, last):
    items = [dec("r", "x", kept, minute) for minute, kept in raw]
    chosen = recent(items, last)
    assert len(chosen) == min(last, len(items))
    left_out = [d for d in items if d not in chosen]
    assert all((d.at, d.finding) <= (c.at, c.finding) for d in left_out for c in chosen)


# -- calibration -------------------------------------------------------------------------------

pairs = st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=200)


@given(pairs, st.floats(0, 1), st.floats(0, 1))
def test_calibration_is_monotone_and_stays_in_0_1(items, a, b):
    cal = calibration(items)
    low, high = sorted((a, b))
    assert 0.0 <= cal.apply(low) <= cal.apply(high) <= 1.0


@given(
    st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=MIN_CALIBRATION_DECISIONS - 1),
    st.floats(0, 1),
)
def test_calibration_is_the_identity_with_too_few_decisions(items, stated):
    cal = calibration(items)
    assert not cal.active and cal.apply(stated) == stated
    assert Calibration().apply(stated) == stated


@given(
    st.integers(0, CALIBRATION_PRIOR - 1).map(lambda b: b / CALIBRATION_PRIOR),
    st.integers(200, 2_000),
    st.floats(0, 1),
    st.floats(0, 1),
    st.data(),
)
def test_calibration_converges_to_the_measured_precision_of_a_bin_with_many_decisions(
    bin_start, n, share, stated, data
):
    kept = round(n * share)
    offsets = data.draw(st.lists(st.floats(0, 0.0999), min_size=n, max_size=n))
    items = [(bin_start + o, i < kept) for i, o in enumerate(offsets)]
    cal = calibration(items)
    # The stated confidence still weighs CALIBRATION_PRIOR decisions' worth: the distance to
    # the measured precision shrinks as the decisions grow.
    assert abs(cal.apply(stated) - kept / n) <= CALIBRATION_PRIOR / (n + CALIBRATION_PRIOR) + 1e-4


def test_calibration_equals_hand_computed_values():
    # 20 decisions at 0.9 stated, 6 kept: measured 0.3, weight 20 / 30.
    cal = calibration([(0.9, i < 6) for i in range(20)])
    assert cal.apply(0.9) == pytest.approx(2 / 3 * 0.3 + 1 / 3 * 0.9, abs=1e-4)  # 0.5
    # Two bins whose precision falls as confidence rises are pooled: (0.8×10 + 0.2×10) / 20.
    cal = calibration([(0.55, i < 8) for i in range(10)] + [(0.95, i < 2) for i in range(10)])
    assert [y for _, y in cal.knots] == pytest.approx([0.5, 0.5])


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0.1, 10)), max_size=30))
def test_pooling_is_non_decreasing_and_keeps_the_weighted_mean(values):
    fitted = pooled(values)
    assert all(a <= b for a, b in pairwise(fitted))
    assume(values)
    weights = [w for _, w in values]
    mean = sum(v * w for v, w in values) / sum(weights)
    assert sum(f * w for f, w in zip(fitted, weights, strict=True)) / sum(weights) == (
        pytest.approx(mean)
    )


def view(vid: str, stream: str, confidence: float) -> NodeView:
    return NodeView(
        id=vid,
        agent=stream,
        stream=stream,
        type=NodeType.BUG,
        priority=Priority.P0,
        confidence=confidence,
    )


def test_the_verdicts_views_keep_the_stated_confidence_beside_the_calibrated_one():
    views = [view("1", "implementation", 0.9), view("2", "bandit", 0.8)]
    assert with_calibrated(views, {}) == views
    cal = calibration([(0.9, i < 6) for i in range(20)])
    first, second = with_calibrated(views, {"implementation": cal, "bandit": calibration([])})
    assert (first.confidence, first.stated_confidence) == (0.5, 0.9)
    assert second == views[1]  # too few decisions: as stated


# -- the report --------------------------------------------------------------------------------


def test_the_reports_reviewers_table_and_issue_lines_show_precision_and_calibration():
    from reviews.domain.report import ReportInput, ReviewerLine, render_report
    from reviews.domain.reviewer_precision import Calibrated
    from reviews.domain.types import Dimension, ReviewerSpec, ReviewState
    from reviews.domain.verdict import node_verdict

    nodes = [view("1", "implementation", 0.9), view("2", "bandit", 0.8)]
    report = render_report(
        ReportInput(
            verdict=node_verdict(nodes),
            reviewers=[
                ReviewerLine(
                    ReviewerSpec(Dimension.IMPLEMENTATION),
                    ReviewState.BLOCKED,
                    precision=Precision(kept=3, dismissed=9),
                ),
                ReviewerLine(ReviewerSpec(Dimension.SECURITY), None, failure="timeout"),
            ],
            nodes=nodes,
            calibrated={"1": Calibrated(stated=0.9, value=0.5455, decisions=12)},
        )
    )
    assert (
        "| Reviewer | Verdict | Turns | Precision (last 100 decisions) |\n|---|---|---|---|"
        in report
    )
    assert (
        "| implementation | BLOCKED | — | 0.25 (3 of 12 kept; 95% interval 0.09–0.53) |" in report
    )
    assert "| security | FAILED | — | no decisions yet |" in report
    assert "confidence stated 0.90, calibrated 0.55 from 12 decisions)" in report
    assert "(P0, other, confidence 0.80)" in report  # not calibrated: as stated


# -- a drop in precision (calibration stale) ------------------------------------------------


def test_a_reviewer_right_for_long_then_wrong_lately_has_dropped():
    # Oldest first: 30 kept, then the latest 20 all dismissed.
    items = [dec("impl", "r", True, m) for m in range(30)]
    items += [dec("impl", "r", False, m) for m in range(30, 50)]
    latest, before = precision_drop(items)
    assert (latest.kept, latest.dismissed, before.kept, before.dismissed) == (0, 20, 30, 0)
    assert reviewer_figures(items)[0].drop == (latest, before)


@given(st.lists(st.booleans(), max_size=80))
def test_a_drop_is_measured_never_guessed(kept):
    items = [dec("impl", "r", k, m) for m, k in enumerate(kept)]
    drop = precision_drop(items)
    if len(kept) < DROP_WINDOW + MIN_DROP_DECISIONS:
        assert drop is None  # too few decisions on one side say nothing
    if drop is not None:
        latest, before = drop
        assert latest.decisions == DROP_WINDOW
        assert latest.decisions + before.decisions == len(kept)
        assert latest.value < before.value and latest.high < before.low
    # A reviewer never wrong lately has not dropped, whatever came before.
    if all(kept[-DROP_WINDOW:]):
        assert drop is None
