"""Verification panel and completeness critic.

Entry: deduplicated, active findings with confidence ≥ 0.5. Modes: `rigorous` verifies all of
them, `fast` none (they pass through tagged unverified), `normal` all of them unless there are
more than 25 — then only critical/high ones (severity critical/high or priority P0/P1), those in
the 0.5-0.75 confidence band, and those whose reviewers disagreed on severity; the rest pass
through unverified and the report says the panel was narrowed.

Survival, from lens 1 (is it real and reachable) and lens 2 (can it be explained away):
- both say false positive → filtered (counted in the report, never silently dropped);
- both say real → confirmed, and it takes lens 3's severity (its priority follows);
- a split vote, or one valid verdict → survives, marked contested;
- no valid verdict at all → survives, marked unverified, with each lens's abstention as the
  reason (nobody checked it, so it is not "contested").
A verifier that errors, or whose answer never validated, abstains (`None`). A lens that says
REAL is a peer confirmation.

The lenses judge findings in groups of at most `PANEL_GROUP_SIZE`, one call per lens and
group. An offline analyzer's finding (it carries the rule that matched) is not put to lens 1:
the deterministic match stands for "it is there and reachable as written", unless the finding is
contested (`conflicting_severity`: a reviewer rated it otherwise). The rule then counts as lens
1's REAL only beside a valid verdict of lens 2, so lens 2 alone confirms (REAL) or contests it
(FALSE_POSITIVE: never filtered on one lens's word), and without lens 2 it is unverified like any
finding no lens judged. The note names the rule, so the report says which lenses ran.

Conflicting severity: a canonical finding whose merged duplicates were given another priority or
severity by their reviewers (`conflicting_severity`, read from the nodes' `duplicate_of`).

The completeness critic's deterministic part decides which dimensions the change warrants
(`warranted_dimensions`; a model's judgement may add to them), lists coverage gaps and names at
most one follow-up reviewer: the first warranted dimension that did not run, most important
first. Uncited files and uncovered hot spots are reported, never a reason for a follow-up alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from .types import Dimension, NodeType, NodeView, Priority, Severity, priority_for_severity

LENSES = ("reachability", "false_positive", "severity")
ENTRY_CONFIDENCE = 0.5
#: Findings one lens judges in one call. Each finding brings its excerpt (~40 lines at most), so
#: eight keep a call's prompt near what one reviewer's brief costs and its answer short enough
#: that a model does not lose track of refs; a thorough round (8-10 findings) needs one or two
#: groups, and every lens call repeats its system prompt and schema once per group, not per
#: finding.
PANEL_GROUP_SIZE = 8
COST_GUARD_LIMIT = 25
UNCERTAIN_BAND = (0.5, 0.75)


class PanelMode(StrEnum):
    RIGOROUS = "rigorous"
    NORMAL = "normal"
    FAST = "fast"


class LensVerdict(StrEnum):
    REAL = "real"
    FALSE_POSITIVE = "false_positive"


class PanelStatus(StrEnum):
    CONFIRMED = "confirmed"
    CONTESTED = "contested"
    FILTERED = "filtered"
    UNVERIFIED = "unverified"


@dataclass(frozen=True, slots=True)
class PanelPlan:
    verify: tuple[str, ...]
    unverified: tuple[str, ...]  # entered but skipped by the mode or the cost guard
    not_entered: tuple[str, ...]  # below the confidence bar, or not a canonical active node
    narrowed: bool
    # Verified without lens 1: an analyzer's rule matched and nobody rated the finding otherwise.
    rule_reachable: tuple[str, ...] = ()

    def lenses(self, node_id: str) -> tuple[str, ...]:
        """The lenses a verified finding is put to."""
        if node_id in self.rule_reachable:
            return tuple(lens for lens in LENSES if lens != "reachability")
        return LENSES

    def groups(self, size: int = PANEL_GROUP_SIZE) -> tuple[tuple[str, ...], ...]:
        """The verified findings in groups of at most `size`, as even as they come (10 → 5 + 5:
        the panel waits for its slowest group), in the plan's order."""
        return panel_groups(self.verify, size)


def panel_groups(ids: Sequence[str], size: int = PANEL_GROUP_SIZE) -> tuple[tuple[str, ...], ...]:
    if size < 1:
        raise ValueError("a group holds at least one finding")
    count = -(-len(ids) // size)
    if count == 0:
        return ()
    base, extra = divmod(len(ids), count)
    groups: list[tuple[str, ...]] = []
    start = 0
    for i in range(count):
        end = start + base + (1 if i < extra else 0)
        groups.append(tuple(ids[start:end]))
        start = end
    return tuple(groups)


def plan_panel(
    nodes: Iterable[NodeView],
    *,
    mode: PanelMode = PanelMode.NORMAL,
    conflicting_severity: Collection[str] = (),
    settled: Collection[str] = (),
) -> PanelPlan:
    """Which findings go to the verifiers. `conflicting_severity`: ids whose reviewers disagreed
    on severity (see `conflicting_severity`). `settled`: ids the panel already verified or let
    pass in an earlier pass of the round (before a follow-up reviewer): they count towards the
    cost guard but are planned again neither way."""
    entered: list[NodeView] = []
    not_entered: list[NodeView] = []
    for node in sorted(nodes, key=lambda n: n.id):
        eligible = node.active and node.duplicate_of is None
        (entered if eligible and node.confidence >= ENTRY_CONFIDENCE else not_entered).append(node)
    skipped = tuple(n.id for n in not_entered)
    fresh = [n for n in entered if n.id not in settled]
    ids = tuple(n.id for n in fresh)
    by_rule = tuple(
        n.id for n in fresh if n.analyzer_rule is not None and n.id not in conflicting_severity
    )
    if mode is PanelMode.FAST:
        return PanelPlan((), ids, skipped, narrowed=False)
    if mode is PanelMode.RIGOROUS or len(entered) <= COST_GUARD_LIMIT:
        return PanelPlan(ids, (), skipped, narrowed=False, rule_reachable=by_rule)
    low, high = UNCERTAIN_BAND
    verify: list[str] = []
    rest: list[str] = []
    for node in fresh:
        worth_it = (
            node.severity in (Severity.CRITICAL, Severity.HIGH)
            or node.priority in (Priority.P0, Priority.P1)
            or low <= node.confidence <= high
            or node.id in conflicting_severity
        )
        (verify if worth_it else rest).append(node.id)
    chosen = set(verify)
    return PanelPlan(
        tuple(verify),
        tuple(rest),
        skipped,
        narrowed=True,
        rule_reachable=tuple(i for i in by_rule if i in chosen),
    )


def conflicting_severity(nodes: Iterable[NodeView]) -> frozenset[str]:
    """Canonical findings whose reviewers disagreed on how bad they are: a duplicate merged into
    one (`duplicate_of`) carries another priority or severity than the canonical it joined."""
    views = list(nodes)
    canonical = {n.id: n for n in views if n.duplicate_of is None}
    rated: dict[str, set[tuple[Priority, Severity]]] = defaultdict(set)
    for node in views:
        if node.duplicate_of is not None and node.duplicate_of in canonical:
            rated[node.duplicate_of].add((node.priority, node.severity))
    return frozenset(
        node_id
        for node_id, ratings in rated.items()
        if ratings - {(canonical[node_id].priority, canonical[node_id].severity)}
    )


#: A confirmed finding at this priority or above is a defect, whatever type it was filed as.
MUST_BE_A_BUG = Priority.P1


@dataclass(frozen=True, slots=True)
class PanelOutcome:
    status: PanelStatus
    severity: Severity
    priority: Priority
    peer_confirmations: int  # lenses that said REAL
    note: str
    # The node's new type when lens 3's priority would contradict it (a P0 recommendation).
    node_type: NodeType | None = None


def panel_outcome(
    node: NodeView,
    *,
    reachability: LensVerdict | None,
    false_positive: LensVerdict | None,
    severity_vote: Severity | None,
    abstentions: Mapping[str, str] | None = None,
    rule: str | None = None,
) -> PanelOutcome:
    """Apply the survival rule to one verified finding (None = the lens abstained or errored;
    `abstentions`: lens name → why it gave no valid answer, quoted in the note; `rule`: the
    analyzer rule that stood for lens 1, which was not asked)."""
    outcome = _survival(
        node,
        reachability=(LensVerdict.REAL if false_positive is not None else None)
        if rule is not None
        else reachability,
        false_positive=false_positive,
        severity_vote=severity_vote,
        abstentions=abstentions,
    )
    if rule is None:
        return outcome
    return replace(
        outcome,
        peer_confirmations=int(false_positive is LensVerdict.REAL),
        note=(
            f"{outcome.note}; reachability not asked of a model: the analyzer's rule {rule} matched"
        ),
    )


def _survival(
    node: NodeView,
    *,
    reachability: LensVerdict | None,
    false_positive: LensVerdict | None,
    severity_vote: Severity | None,
    abstentions: Mapping[str, str] | None,
) -> PanelOutcome:
    votes = [v for v in (reachability, false_positive) if v is not None]
    real = sum(v is LensVerdict.REAL for v in votes)
    fp = sum(v is LensVerdict.FALSE_POSITIVE for v in votes)
    if len(votes) == 2 and fp == 2:
        return PanelOutcome(
            PanelStatus.FILTERED,
            node.severity,
            node.priority,
            0,
            "the reachability and false-positive checks both found a false positive",
        )
    if len(votes) == 2 and real == 2:
        severity = severity_vote or node.severity
        priority = priority_for_severity(severity_vote) if severity_vote else node.priority
        why = (
            f"the severity check set it {severity}"
            if severity_vote
            else "the severity check gave no answer"
        )
        node_type = None
        if priority.rank <= MUST_BE_A_BUG.rank and priority.rank < node.priority.rank:
            # A priority and a type that contradict each other are not shown: a lifted
            # recommendation is a defect; a question or a ticket keeps its priority.
            if node.type in (NodeType.RECOMMENDATION, NodeType.SUGGESTION):
                node_type = NodeType.BUG
                why += f"; a {node.type} at {priority} is a bug"
            elif node.type is not NodeType.BUG:
                why += f"; not lifted to {priority}: a {node.type} is not a defect"
                severity, priority = node.severity, node.priority
        return PanelOutcome(
            PanelStatus.CONFIRMED, severity, priority, real, f"confirmed; {why}", node_type
        )
    abstained = "; ".join(f"{lens}: {why}" for lens, why in (abstentions or {}).items() if why)
    if not votes:
        note = "no lens gave a valid verdict" + (f" ({abstained})" if abstained else "")
        return PanelOutcome(PanelStatus.UNVERIFIED, node.severity, node.priority, 0, note)
    why = "split vote" if len(votes) == 2 else "only 1 valid verdict"
    if abstained:
        why += f" ({abstained})"
    return PanelOutcome(PanelStatus.CONTESTED, node.severity, node.priority, real, why)


def unverified_outcome(node: NodeView) -> PanelOutcome:
    return PanelOutcome(
        PanelStatus.UNVERIFIED, node.severity, node.priority, 0, "passed through unverified"
    )


# --- completeness critic -------------------------------------------------------------------

#: Which missing dimension to follow up first: the one whose silence costs most.
FOLLOW_UP_ORDER = (
    Dimension.SECURITY,
    Dimension.REQUIREMENTS,
    Dimension.IMPLEMENTATION,
    Dimension.PERFORMANCE,
    Dimension.ARCHITECTURE,
    Dimension.QUALITY,
)


@dataclass(frozen=True, slots=True)
class CoverageGaps:
    missing_dimensions: tuple[Dimension, ...]
    uncited_files: tuple[str, ...]
    uncovered_hot_spots: tuple[str, ...]
    follow_up: Dimension | None

    @property
    def complete(self) -> bool:
        return not (self.missing_dimensions or self.uncited_files or self.uncovered_hot_spots)


def warranted_dimensions(
    *,
    scheduled: Collection[Dimension],
    process_blocked: Collection[Dimension] = (),
    high_risk: bool = False,
    judged: Collection[Dimension] | None = None,
    request_known: bool = True,
) -> frozenset[Dimension]:
    """The dimensions the change needs: each one the round scheduled a reviewer for, security
    when the change has a high-risk pattern, and those a critic model judged needed (`judged`,
    None when it did not answer). A process-blocked dimension waits for a person, not for a
    follow-up reviewer; requirements cannot be checked without the original request."""
    needed = set(scheduled) | set(judged or ())
    if high_risk:
        needed.add(Dimension.SECURITY)
    if not request_known:
        needed.discard(Dimension.REQUIREMENTS)
    return frozenset(needed - set(process_blocked))


def coverage_gaps(
    *,
    warranted: Collection[Dimension],
    ran: Collection[Dimension],
    changed_files: Sequence[str],
    nodes: Iterable[NodeView],
    hot_spots: Collection[str] = (),
) -> CoverageGaps:
    """The gaps, and at most one follow-up: the first warranted dimension that did not run in
    FOLLOW_UP_ORDER. Uncited files and hot spots are reported only: a file nobody cited may
    simply be fine, and a second reviewer of a dimension that ran would repeat it."""
    cited = {n.path for n in nodes if n.path}
    missing = tuple(d for d in FOLLOW_UP_ORDER if d in warranted and d not in ran)
    return CoverageGaps(
        missing_dimensions=missing,
        uncited_files=tuple(sorted(set(changed_files) - cited)),
        uncovered_hot_spots=tuple(sorted(set(hot_spots) - cited)),
        follow_up=missing[0] if missing else None,
    )


#: What the report and the page say when the workspace's panel mode skips both stages.
FAST_MODE_SKIP = "panel and critic skipped: fast mode"


EXCERPT_CONTEXT = 10  # lines shown on each side of a finding's lines


def excerpt_ranges(
    spans: Iterable[tuple[int, int]], total_lines: int, context: int = EXCERPT_CONTEXT
) -> tuple[tuple[int, int], ...]:
    """The line ranges (1-based, inclusive) of one file a panel lens is shown for its findings'
    `spans`: each span with `context` lines around it, clipped to the file, overlapping or
    touching ranges merged, in file order. A file's code goes out once however many findings
    cite it."""
    ranges = sorted(
        (max(start - context, 1), min(max(end, start) + context, total_lines))
        for start, end in spans
        if 1 <= start <= total_lines
    )
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return tuple(merged)
