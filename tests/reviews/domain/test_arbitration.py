"""Arbitration order for disagreements."""

from __future__ import annotations

import pytest

from reviews.domain.arbitration import ArbitrationContext, ArbitrationRule, arbitrate
from reviews.domain.disagreements import Disagreement
from reviews.domain.types import Category, NodeType, NodeView, Priority, ReviewState, Severity


def _node(id: str, agent: str, priority: Priority, **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id=id,
        agent=agent,
        type=NodeType.BUG,
        priority=priority,
        confidence=0.9,
        category=Category.CORRECTNESS,
        severity=Severity.MEDIUM,
        path="app/x.py",
        start_line=5,
        end_line=5,
        title=f"finding {id}",
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


def _pair(a: NodeView, b: NodeView) -> Disagreement:
    return Disagreement(first=a, second=b, reasons=("test",))


P1_BUG = _node("a", "impl", Priority.P1)
P3_SUGG = _node("b", "quality", Priority.P3, type=NodeType.SUGGESTION)
P0_BUG = _node("c", "impl", Priority.P0)
SEC_P1 = _node("d", "arch", Priority.P1, category=Category.SECURITY)
P2_BUG = _node("e", "impl", Priority.P2)
CRIT_SEV_P2 = _node("f", "impl", Priority.P2, severity=Severity.CRITICAL)


@pytest.mark.parametrize(
    ("pair", "context", "rule", "winner", "state"),
    [
        # 1. requirements non-compliance beats everything, even a minor pair
        (
            (P2_BUG, P3_SUGG),
            ArbitrationContext(requirements_noncompliance=True),
            ArbitrationRule.REQUIREMENTS,
            "e",
            ReviewState.BLOCKED,
        ),
        # 2. a critical finding wins (by priority or by severity)
        ((P3_SUGG, P0_BUG), None, ArbitrationRule.CRITICAL, "c", ReviewState.BLOCKED),
        (
            (CRIT_SEV_P2, P3_SUGG),
            None,
            ArbitrationRule.CRITICAL,
            "f",
            ReviewState.CHANGES_REQUESTED,
        ),
        # 2 before 3: critical beats a security concern
        (
            (SEC_P1, _node("g", "impl", Priority.P0, confidence=0.5)),
            None,
            ArbitrationRule.CRITICAL,
            "g",
            ReviewState.CHANGES_REQUESTED,
        ),
        # 3. a security concern wins the tie
        ((P3_SUGG, SEC_P1), None, ArbitrationRule.SECURITY, "d", ReviewState.CHANGES_REQUESTED),
        # 3 yields when the security concern is clearly a false positive → 5, in doubt
        (
            (SEC_P1, P3_SUGG),
            ArbitrationContext(clearly_false_positive=frozenset({"d"})),
            ArbitrationRule.DOUBT,
            "d",
            ReviewState.CHANGES_REQUESTED,
        ),
        # 4. only minor issues → the approver's side
        (
            (P2_BUG, _node("h", "q", Priority.P3, type=NodeType.SUGGESTION)),
            None,
            ArbitrationRule.MINOR,
            "h",
            ReviewState.APPROVED,
        ),
        # 5. judged on the merits when the lead documented a judgement
        (
            (P1_BUG, P3_SUGG),
            ArbitrationContext(merits_winner="b", merits_note="guarded above"),
            ArbitrationRule.MERITS,
            "b",
            ReviewState.APPROVED,
        ),
        # 5. in doubt between approve and changes-requested → changes-requested
        ((P1_BUG, P3_SUGG), None, ArbitrationRule.DOUBT, "a", ReviewState.CHANGES_REQUESTED),
    ],
)
def test_it_applies_the_arbitration_order(
    pair: tuple[NodeView, NodeView],
    context: ArbitrationContext | None,
    rule: ArbitrationRule,
    winner: str,
    state: ReviewState,
) -> None:
    """The first matching rule decides; the decision names the winner and the state."""
    decision = arbitrate(_pair(*pair), context)
    assert (decision.rule, decision.winner_id, decision.state) == (rule, winner, state)
    reversed_decision = arbitrate(_pair(pair[1], pair[0]), context)
    assert reversed_decision == decision


def test_it_writes_a_rationale_naming_both_sides_and_the_rule() -> None:
    """The rationale documents who said what and which rule decided."""
    decision = arbitrate(
        _pair(P1_BUG, P3_SUGG),
        ArbitrationContext(merits_winner="b", merits_note="input is validated"),
    )
    assert "impl: P1 bug 'finding a' at app/x.py:5" in decision.rationale
    assert "quality: P3 suggestion 'finding b'" in decision.rationale
    assert "input is validated (rule 5)" in decision.rationale
    fp = arbitrate(
        _pair(SEC_P1, P3_SUGG), ArbitrationContext(clearly_false_positive=frozenset({"d"}))
    )
    assert "shown to be a false positive" in fp.rationale
