"""The deterministic finaliser: nodes + axes → Ship / Hold / Block.

Counted nodes: status open or consensus_ready, across every stream of the round. A demoted
duplicate counts only through its canonical node (if the canonical is missing from the input
the duplicate counts on its own, so a finding is never lost by a dangling link).

Rules, in order: the requirements reviewer judged the change off target (it implements
something other than the original request) → Block, the rule naming its reason; any P0 with
confidence ≥ 0.7 → Block; else any P0 or P1 → Hold; else Ship. Then
gated axes may only make it stricter. An offline analyzer's P0 blocks only when its rule
is on the high-precision list or a model reviewer, a verifier lens or a person backs it
(`precision.unconfirmed_pattern`); until then it holds, and the rule says so.

A node's confidence is what the caller gives: `round_finalise` maps each through its
reviewer's measured precision first (reviews/domain/reviewer_precision.py), keeping the stated
one beside it, and the rule of a P0 names both.

Confidence: over the contributing nodes (those matching the deciding rule),
`mean x (1 - population standard deviation)`. Confidences lie in [0, 1] so the standard
deviation is at most 0.5: agreement keeps the mean, divergence lowers it. Ship with no
P0/P1, or a Block forced by a failed axis, has confidence 1.0: nothing argues against it, and a
failed axis is computed, not guessed. A level forced by a gated axis that is `unavailable` or
`partial` has no confidence (None): it rests on missing data, so no number would be honest.

The rule names what decided the verdict: the top finding's title and place, with the peers
who confirmed it. Only peer confirmations count (`consensus.peer_confirmers`): a confirmation
row whose author is the node's own author is ignored here too, the third place that enforces
"never one's own confirmation" beside the confirmation service and the publisher.

Every recomputation (a person resolves, dismisses, confirms, decides a disagreement, an axis is
submitted) goes through `finalise`, the function the pipeline's last stage uses.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from statistics import fmean, pstdev

from .axes import axis_floor
from .consensus import confirmers_in_words, peer_confirmers
from .precision import unconfirmed_pattern
from .types import AxisName, AxisResult, NodeView, Priority, VerdictLevel

BLOCK_CONFIDENCE = 0.7


@dataclass(frozen=True, slots=True)
class Verdict:
    level: VerdictLevel
    rule: str
    confidence: float | None  # None: decided by missing data, no confidence to state
    contributing: tuple[str, ...] = ()

    def same_as(self, other: Verdict | None) -> bool:
        """Nothing a reader sees would change (level, rule and confidence are equal)."""
        return other is not None and (self.level, self.rule, self.confidence) == (
            other.level,
            other.rule,
            other.confidence,
        )


def counted_nodes(nodes: Iterable[NodeView]) -> list[NodeView]:
    """Active nodes, duplicates collapsed into their canonical node."""
    node_list = list(nodes)
    present = {n.id for n in node_list}
    return [
        n
        for n in node_list
        if n.active and (n.duplicate_of is None or n.duplicate_of not in present)
    ]


def spread_confidence(confidences: Iterable[float]) -> float:
    values = list(confidences)
    if not values:
        return 1.0
    return round(max(0.0, min(1.0, fmean(values) * (1 - pstdev(values)))), 4)


def node_verdict(nodes: Iterable[NodeView]) -> Verdict:
    """The verdict from findings alone."""
    counted = counted_nodes(nodes)
    blocking = _ranked(
        n
        for n in counted
        if _is_p0(n) and n.confidence >= BLOCK_CONFIDENCE and not unconfirmed_pattern(n)
    )
    if blocking:
        return _decided(VerdictLevel.BLOCK, blocking)
    holding = _ranked(n for n in counted if n.priority in (Priority.P0, Priority.P1))
    if holding:
        return _decided(VerdictLevel.HOLD, holding)
    return Verdict(VerdictLevel.SHIP, "no open P0 or P1 finding", 1.0)


def off_target_verdict(reason: str) -> Verdict:
    """The requirements reviewer found the change implements something other than what was
    asked: whatever its findings, the change is blocked, and the rule says why."""
    why = " ".join(reason.split()) or "the change implements something other than the request"
    return Verdict(VerdictLevel.BLOCK, f"implementation off-target: {why}", 1.0)


def finalise(
    nodes: Iterable[NodeView],
    *,
    axes: Mapping[AxisName, AxisResult] | None = None,
    gated: Collection[AxisName] = (),
    off_target: str = "",
) -> Verdict:
    """An off-target change blocks first; then nodes, then the gated axes, which can only
    tighten the verdict."""
    if off_target.strip():
        return off_target_verdict(off_target)
    verdict = node_verdict(nodes)
    floor = axis_floor(axes or {}, gated=gated)
    if floor is None or floor.level.strictness <= verdict.level.strictness:
        return verdict
    if floor.level is VerdictLevel.BLOCK:
        return Verdict(floor.level, floor.rule, 1.0)
    rule = floor.rule
    if "un-gate" not in rule:  # say what would clear a gate that is waiting for evidence
        rule += ": submit it from CI or un-gate it in settings"
    return Verdict(floor.level, rule, None)


def _is_p0(node: NodeView) -> bool:
    return node.priority is Priority.P0


def _ranked(nodes: Iterable[NodeView]) -> list[NodeView]:
    return sorted(nodes, key=lambda n: (n.priority.rank, -n.confidence, n.path or "", n.id))


def _title(node: NodeView) -> str:
    text = " ".join(node.title.split())
    return text if len(text) <= 120 else text[:119] + "…"


def _decided(level: VerdictLevel, nodes: list[NodeView]) -> Verdict:
    top = nodes[0]
    unconfirmed = level is VerdictLevel.HOLD and unconfirmed_pattern(top)
    if _is_p0(top):
        if unconfirmed:
            qualifier = ", not blocking until a reviewer confirms it"
        elif level is VerdictLevel.BLOCK:
            qualifier = ""
        else:
            qualifier = f" (below {BLOCK_CONFIDENCE})"
        stated = top.stated_confidence
        # A confidence calibrated by the reviewer's measured precision says what it was.
        calibrated = f", calibrated from a stated {stated:.2f}" if stated is not None else ""
        rule = f"P0 at {top.confidence:.2f}{calibrated}{qualifier}: {_title(top)} ({top.location})"
    else:
        rule = f"{top.priority}: {_title(top)} ({top.location})"
    if unconfirmed:
        rule = f"unconfirmed analyzer finding ({top.analyzer_rule}) — {rule}"
    if peers := peer_confirmers(top):
        # People and outside agents are named in words, never by id: the rule is posted.
        rule += f", confirmed by {confirmers_in_words(peers)}"
    if len(nodes) > 1:
        more = len(nodes) - 1
        rule += f" (and {more} more finding{'s' if more > 1 else ''})"
    return Verdict(
        level=level,
        rule=rule,
        confidence=spread_confidence(n.confidence for n in nodes),
        contributing=tuple(n.id for n in nodes),
    )
