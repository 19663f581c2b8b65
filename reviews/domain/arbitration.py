"""Arbitration of reviewer disagreements, as a pure function.

The rules apply in order; the first that fits decides, and the rationale says which and why:
1. a real requirements non-compliance → BLOCKED;
2. any critical finding (P0 or severity critical) wins;
3. a security concern (the stricter node is a security finding) wins, unless it is clearly a
   false positive;
4. a disagreement only about minor issues (both P2/P3, neither critical) sides with the approver;
5. otherwise it is judged on the merits — the lead's documented judgement — and when nobody
   judged, doubt between approve and changes-requested resolves to changes-requested.

"Stricter" is the node with the lower priority number, a bug before a suggestion on a tie, then
the lower id, so the outcome never depends on the order of the pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from .disagreements import Disagreement
from .types import REVIEW_STATE_FOR_VERDICT, Category, NodeType, NodeView, ReviewState, Severity
from .verdict import node_verdict


class ArbitrationRule(StrEnum):
    REQUIREMENTS = "requirements non-compliance"
    CRITICAL = "critical finding wins"
    SECURITY = "security concern wins the tie"
    MINOR = "minor issues side with the approver"
    MERITS = "judged on the merits"
    DOUBT = "in doubt, changes requested"


@dataclass(frozen=True, slots=True)
class ArbitrationContext:
    """What the arbiter knows beyond the two nodes.

    `clearly_false_positive`: ids of nodes shown to be false positives (e.g. filtered by the
    verification panel). `merits_winner`/`merits_note`: the lead's judgement, if any.
    """

    requirements_noncompliance: bool = False
    clearly_false_positive: frozenset[str] = field(default_factory=frozenset)
    merits_winner: str | None = None
    merits_note: str = ""


@dataclass(frozen=True, slots=True)
class ArbitrationDecision:
    rule: ArbitrationRule
    winner_id: str
    state: ReviewState
    rationale: str


_STATE_ORDER = (ReviewState.APPROVED, ReviewState.CHANGES_REQUESTED, ReviewState.BLOCKED)


def stance(node: NodeView) -> ReviewState:
    """What a node alone says about the change, by the finaliser's own rules."""
    return REVIEW_STATE_FOR_VERDICT[node_verdict([node]).level]


def arbitrate(
    disagreement: Disagreement, context: ArbitrationContext | None = None
) -> ArbitrationDecision:
    ctx = context or ArbitrationContext()
    strict, lenient = sorted((disagreement.first, disagreement.second), key=_strictness)
    versus = f"{_describe(strict)} vs {_describe(lenient)}"

    if ctx.requirements_noncompliance:
        return ArbitrationDecision(
            ArbitrationRule.REQUIREMENTS,
            strict.id,
            ReviewState.BLOCKED,
            f"{versus}: the change does not meet its requirements, which blocks it whatever the "
            "reviewers' priorities (rule 1).",
        )

    critical = [n for n in (strict, lenient) if _is_critical(n)]
    if critical:
        winner = critical[0]
        return ArbitrationDecision(
            ArbitrationRule.CRITICAL,
            winner.id,
            _at_least(stance(winner), ReviewState.CHANGES_REQUESTED),
            f"{versus}: {winner.agent}'s finding is critical and a critical finding wins (rule 2).",
        )

    notes = []
    if strict.category is Category.SECURITY:
        if strict.id not in ctx.clearly_false_positive:
            return ArbitrationDecision(
                ArbitrationRule.SECURITY,
                strict.id,
                _at_least(stance(strict), ReviewState.CHANGES_REQUESTED),
                f"{versus}: a security concern wins the tie (rule 3).",
            )
        notes.append("the security concern was shown to be a false positive, so rule 3 yields")

    if strict.priority.rank >= 2 and lenient.priority.rank >= 2:
        return ArbitrationDecision(
            ArbitrationRule.MINOR,
            lenient.id,
            ReviewState.APPROVED,
            _join(
                versus, notes, "both findings are minor, so the approver's view stands (rule 4)."
            ),
        )

    if ctx.merits_winner in (strict.id, lenient.id):
        winner = strict if ctx.merits_winner == strict.id else lenient
        note = ctx.merits_note.strip() or "no note given"
        return ArbitrationDecision(
            ArbitrationRule.MERITS,
            winner.id,
            stance(winner),
            _join(versus, notes, f"judged on the merits for {winner.agent}: {note} (rule 5)."),
        )

    return ArbitrationDecision(
        ArbitrationRule.DOUBT,
        strict.id,
        _at_least(stance(strict), ReviewState.CHANGES_REQUESTED),
        _join(
            versus,
            notes,
            "no judgement on the merits yet; in doubt between approve and changes-requested, "
            "changes are requested (rule 5).",
        ),
    )


def _strictness(node: NodeView) -> tuple[int, int, str]:
    return (node.priority.rank, 0 if node.type is NodeType.BUG else 1, node.id)


def _is_critical(node: NodeView) -> bool:
    return node.priority.rank == 0 or node.severity is Severity.CRITICAL


def _at_least(state: ReviewState, floor: ReviewState) -> ReviewState:
    return max(state, floor, key=_STATE_ORDER.index)


def _describe(node: NodeView) -> str:
    return f"{node.agent}: {node.priority} {node.type} {node.title!r} at {node.location}"


def _join(versus: str, notes: list[str], conclusion: str) -> str:
    middle = "".join(f"{note}; " for note in notes)
    return f"{versus}: {middle}{conclusion}"
