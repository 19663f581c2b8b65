"""How often each reviewer is right on this team's code, and what its confidence is worth.

Every decision a person makes about a canonical finding is a labelled example of what its
reviewer got right or wrong (docs/domain-rules.md#reviewer-precision):

- **kept**: a person resolved it, confirmed it, or decided a disagreement for it; or it is
  **fixed**: it was gone after a push that changed its file (the next finished round of another
  head no longer has it, by fingerprint or by path, category and title words, and the file's
  changed content differs between the two rounds);
- **wrong**: a person dismissed it with a reason;
- anything else does not count: an open finding nobody decided, a dismissal without a reason,
  one filtered by the verification panel (no person), one dismissal memory folded under an
  earlier decision (that decision counts once, where it was made), a demoted duplicate (decided
  with its canonical finding). A superseded round never finishes, so its findings count by their
  decisions only.

Precision is kept / (kept + wrong), per reviewer (its stream's name) and per rule (an
analyzer's rule id, a model reviewer's defect category), with a 95% Wilson score interval.

**Calibration** maps a reviewer's stated confidence through what its decisions measured: the
decisions are put in bins by stated confidence, made monotone by pooling adjacent violators
(isotonic regression over the bins), read by linear interpolation between the bins, and blended
with the stated confidence by how much evidence there is (`n / (n + CALIBRATION_PRIOR)`). Below
`MIN_CALIBRATION_DECISIONS` the mapping is the identity: a verdict never moves on a handful of
decisions.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from functools import lru_cache, partial
from itertools import pairwise

from .fingerprints import title_tokens
from .round_states import RoundRef, RoundState, delta_base
from .types import NodeStatus, NodeView

#: z for a two-sided 95% interval.
Z_95 = 1.959963984540054
#: How many of a reviewer's most recent decisions the report's reviewers table and the
#: calibration of its confidence read.
RECENT_DECISIONS = 100
#: Fewer decisions than this and a reviewer's stated confidence stands as stated.
MIN_CALIBRATION_DECISIONS = 10
#: Bins of stated confidence (0.0–0.1, …, 0.9–1.0).
CALIBRATION_BINS = 10
#: How many decisions the stated confidence is worth when blended with the measured one: at 10
#: decisions the calibrated value is halfway between, at 90 nine tenths measured.
CALIBRATION_PRIOR = 10
#: A drop in precision compares a reviewer's latest DROP_WINDOW decisions with those before
#: them; each side needs MIN_DROP_DECISIONS for the comparison to say anything.
DROP_WINDOW = 20
MIN_DROP_DECISIONS = 10


class Outcome(StrEnum):
    """What a person's decision (or a push) says of a finding."""

    RESOLVED = "resolved"
    CONFIRMED = "confirmed"
    UPHELD = "upheld"  # a person decided a disagreement for it
    FIXED = "fixed"  # gone after a push that changed its file
    DISMISSED = "dismissed"  # with a reason

    @property
    def kept(self) -> bool:
        return self is not Outcome.DISMISSED


# -- the facts -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoundFacts:
    """A round as the fixed rule reads it: `files` maps each changed file's path to its content
    key (reviews/domain/file_tree.py `file_view_key`); None when the round did not record them."""

    id: int
    space: int
    number: int
    state: str
    head: str
    at: datetime
    files: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class FindingFacts:
    """One finding of a round (canonical or a demoted duplicate) and what people did with it.

    `decided_at`: when a person last resolved or dismissed it; `reason`: whether that decision
    gave one; `credited`: that dismissal is an earlier decision the lead pass credited it with
    (dismissal memory folds a finding a person already dismissed: their one decision, already
    counted where they made it); `confirmed_at`: a person's first confirmation; `upheld_at`:
    when a person decided a disagreement for it (its last change since)."""

    id: int
    round: int
    reviewer: str
    rule: str
    confidence: float
    status: NodeStatus
    canonical: bool = True
    path: str | None = None
    category: str = ""
    title: str = ""
    fingerprint: str = ""
    decided_at: datetime | None = None
    reason: bool = False
    credited: bool = False
    confirmed_at: datetime | None = None
    upheld_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """A labelled example: a reviewer's finding and what came of it."""

    reviewer: str
    rule: str
    confidence: float
    outcome: Outcome
    at: datetime
    finding: int = 0
    round: int = 0

    @property
    def kept(self) -> bool:
        return self.outcome.kept


def sameness_keys(finding: FindingFacts) -> frozenset[str]:
    """What makes a later finding the same one: its fingerprint, or the same file, category and
    title words (the fingerprint hashes the anchored code too, so an edited line would make a
    finding reported again look gone)."""
    keys = {f"fp:{finding.fingerprint}"} if finding.fingerprint else set()
    keys.add(f"at:{finding.path or ''}\0{finding.category}\0{_words(finding.title)}")
    return frozenset(keys)


@lru_cache(maxsize=4096)
def _words(title: str) -> str:
    return " ".join(sorted(title_tokens(title)))


def successors(rounds: Iterable[RoundFacts]) -> dict[int, RoundFacts]:
    """Round id → the first later finished round whose delta compares with it (the last
    finished round of another head before it: reviews/domain/round_states.py `delta_base`).
    Only a finished round has one; a re-run of the same head hands its place to the re-run."""
    by_space: dict[int, list[RoundFacts]] = defaultdict(list)
    for r in rounds:
        by_space[r.space].append(r)
    out: dict[int, RoundFacts] = {}
    for space_rounds in by_space.values():
        ordered = sorted(space_rounds, key=lambda r: r.number)
        refs = [RoundRef(r.number, r.state, r.head) for r in ordered]
        by_number = {r.number: r for r in ordered}
        for r in ordered:
            if r.state != RoundState.FINISHED:
                continue
            base = delta_base(refs, r.number).baseline
            if base is not None and by_number[base].id not in out:
                out[by_number[base].id] = r
    return out


def is_fixed(
    finding: FindingFacts,
    before: RoundFacts,
    after: RoundFacts,
    seen_after: Collection[str] | Callable[[], Collection[str]],
) -> bool:
    """Gone after a push because its code changed: anchored in a file whose changed content
    differs between the two rounds (or left the change), and not found again after it.
    `seen_after`: the sameness keys of every finding of `after` (or what computes them, asked
    only once the file is known to have changed)."""
    if not finding.path or before.files is None or after.files is None:
        return False
    if before.files.get(finding.path) == after.files.get(finding.path):
        return False  # the push left its file as it was: not fixed by a change
    seen = seen_after() if callable(seen_after) else seen_after
    return not any(key in seen for key in sameness_keys(finding))


def outcome(finding: FindingFacts, *, fixed: bool = False) -> Outcome | None:
    """The label a canonical finding carries, or None when it does not count."""
    if not finding.canonical:
        return None
    if finding.status is NodeStatus.DISMISSED:
        counted = finding.decided_at is not None and finding.reason and not finding.credited
        return Outcome.DISMISSED if counted else None
    if finding.status is NodeStatus.RESOLVED:
        return Outcome.RESOLVED if finding.decided_at is not None else None
    if finding.confirmed_at is not None:
        return Outcome.CONFIRMED
    if finding.upheld_at is not None:
        return Outcome.UPHELD
    return Outcome.FIXED if fixed else None


def decisions(findings: Iterable[FindingFacts], rounds: Iterable[RoundFacts]) -> list[Decision]:
    """Every labelled example among `findings` (all the findings of `rounds`' spaces that the
    caller wants counted, duplicates included: a duplicate seen after a push is still seen).
    What a round saw is worked out only for the rounds that may have fixed something."""
    finding_list = list(findings)
    round_list = list(rounds)
    by_id = {r.id: r for r in round_list}
    after = successors(round_list)
    by_round: dict[int, list[FindingFacts]] = defaultdict(list)
    for f in finding_list:
        by_round[f.round].append(f)
    seen: dict[int, set[str]] = {}

    def seen_in(r: RoundFacts) -> set[str]:
        if r.id not in seen:
            seen[r.id] = set().union(*(sameness_keys(f) for f in by_round[r.id]))
        return seen[r.id]

    out = []
    for f in finding_list:
        label = outcome(f)
        successor = after.get(f.round)
        before = by_id.get(f.round)
        if (
            label is None
            and f.canonical
            and f.status not in (NodeStatus.DISMISSED, NodeStatus.RESOLVED)
            and successor is not None
            and before is not None
            and is_fixed(f, before, successor, partial(seen_in, successor))
        ):
            label = Outcome.FIXED
        if label is None:
            continue
        at = {
            Outcome.RESOLVED: f.decided_at,
            Outcome.DISMISSED: f.decided_at,
            Outcome.CONFIRMED: f.confirmed_at,
            Outcome.UPHELD: f.upheld_at,
            Outcome.FIXED: successor.at if successor is not None else None,
        }[label]
        assert at is not None  # each label has its time (`outcome` reads it)
        out.append(
            Decision(
                reviewer=f.reviewer,
                rule=f.rule,
                confidence=f.confidence,
                outcome=label,
                at=at,
                finding=f.id,
                round=f.round,
            )
        )
    return out


# -- precision -------------------------------------------------------------------------------


def wilson_interval(kept: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of kept / total; (0, 1) with no decision. It always holds the
    point estimate (bounds nudged by rounding are widened to it) and lies in [0, 1]."""
    if total <= 0:
        return 0.0, 1.0
    p = kept / total
    z2 = z * z
    denominator = 1 + z2 / total
    centre = (p + z2 / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / denominator
    low = max(0.0, min(p, centre - half))
    high = min(1.0, max(p, centre + half))
    return low, high


@dataclass(frozen=True, slots=True)
class Precision:
    kept: int = 0
    dismissed: int = 0

    @property
    def decisions(self) -> int:
        return self.kept + self.dismissed

    @property
    def value(self) -> float | None:
        return self.kept / self.decisions if self.decisions else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.kept, self.decisions)

    @property
    def low(self) -> float:
        return self.interval[0]

    @property
    def high(self) -> float:
        return self.interval[1]

    def words(self) -> str:
        """ "0.75 (6 of 8 kept; 95% interval 0.41–0.93)", or "no decisions yet"."""
        if self.value is None:
            return "no decisions yet"
        low, high = self.interval
        return (
            f"{self.value:.2f} ({self.kept} of {self.decisions} kept; "
            f"95% interval {low:.2f}–{high:.2f})"
        )


def precision_of(items: Iterable[Decision]) -> Precision:
    kept = dismissed = 0
    for d in items:
        if d.kept:
            kept += 1
        else:
            dismissed += 1
    return Precision(kept, dismissed)


@dataclass(frozen=True, slots=True)
class RulePrecision:
    rule: str
    precision: Precision


@dataclass(frozen=True, slots=True)
class ReviewerPrecision:
    """A reviewer's figures over the decisions counted (its most recent `last`, when asked)."""

    reviewer: str
    precision: Precision
    rules: tuple[RulePrecision, ...] = ()
    outcomes: Mapping[Outcome, int] = field(default_factory=dict)
    calibration: Calibration = field(default_factory=lambda: Calibration())
    #: (latest, before) when its precision dropped (`precision_drop`): calibration is stale.
    drop: tuple[Precision, Precision] | None = None


def recent(items: Iterable[Decision], last: int | None) -> list[Decision]:
    """The `last` most recent decisions (all of them for None), newest first."""
    ordered = sorted(items, key=lambda d: (d.at, d.finding), reverse=True)
    return ordered if last is None else ordered[: max(last, 0)]


def precision_drop(
    items: Iterable[Decision], window: int = DROP_WINDOW
) -> tuple[Precision, Precision] | None:
    """(latest, before) when a reviewer's latest `window` decisions are measurably worse than
    the ones before them: both sides hold MIN_DROP_DECISIONS and the latest 95% interval lies
    wholly below the earlier one. None otherwise (too few decisions is no drop)."""
    ordered = recent(items, None)
    latest, before = precision_of(ordered[:window]), precision_of(ordered[window:])
    if min(latest.decisions, before.decisions) < MIN_DROP_DECISIONS:
        return None
    return (latest, before) if latest.high < before.low else None


def reviewer_figures(
    items: Iterable[Decision], *, last: int | None = None
) -> list[ReviewerPrecision]:
    """Each reviewer's precision, per rule under it (most decided first) and the calibration of
    its confidence, over its `last` most recent decisions; reviewers in name order."""
    by_reviewer: dict[str, list[Decision]] = defaultdict(list)
    for d in items:
        by_reviewer[d.reviewer].append(d)
    out = []
    for reviewer in sorted(by_reviewer):
        mine = recent(by_reviewer[reviewer], last)
        by_rule: dict[str, list[Decision]] = defaultdict(list)
        for d in mine:
            by_rule[d.rule].append(d)
        rules = sorted(
            (RulePrecision(rule, precision_of(ds)) for rule, ds in by_rule.items()),
            key=lambda r: (-r.precision.decisions, r.rule),
        )
        counts = Counter(d.outcome for d in mine)
        out.append(
            ReviewerPrecision(
                reviewer=reviewer,
                precision=precision_of(mine),
                rules=tuple(rules),
                outcomes={o: counts[o] for o in Outcome if counts[o]},
                calibration=calibration((d.confidence, d.kept) for d in mine),
                drop=precision_drop(by_reviewer[reviewer]),
            )
        )
    return out


# -- calibration -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Calibration:
    """A reviewer's stated confidence → what its decisions measured. `knots`: (mean stated
    confidence of a bin, its pooled precision), in increasing stated confidence; empty (the
    identity) below MIN_CALIBRATION_DECISIONS."""

    decisions: int = 0
    knots: tuple[tuple[float, float], ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.knots)

    @property
    def weight(self) -> float:
        """How much of the calibrated value is measured rather than stated."""
        return self.decisions / (self.decisions + CALIBRATION_PRIOR) if self.active else 0.0

    def apply(self, stated: float) -> float:
        if not self.active:
            return stated
        c = min(1.0, max(0.0, stated))
        weight = self.weight
        value = weight * _interpolate(self.knots, c) + (1 - weight) * c
        return round(min(1.0, max(0.0, value)), 4)


def _bin(confidence: float) -> int:
    return min(CALIBRATION_BINS - 1, max(0, int(confidence * CALIBRATION_BINS)))


def pooled(values: Sequence[tuple[float, float]]) -> list[float]:
    """Isotonic regression by pooling adjacent violators: (value, weight) in order → the
    non-decreasing sequence closest to the values in weighted squares."""
    blocks: list[tuple[float, float, int]] = []  # (value, weight, how many values)
    for value, weight in values:
        blocks.append((value, weight, 1))
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, n2 = blocks.pop()
            v1, w1, n1 = blocks.pop()
            blocks.append(((v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, n1 + n2))
    out: list[float] = []
    for value, _, count in blocks:
        out += [value] * count
    return out


def calibration(pairs: Iterable[tuple[float, bool]]) -> Calibration:
    """The calibration of (stated confidence, kept) decisions."""
    items = [(min(1.0, max(0.0, c)), kept) for c, kept in pairs]
    if len(items) < MIN_CALIBRATION_DECISIONS:
        return Calibration(decisions=len(items))
    bins: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for c, kept in items:
        bins[_bin(c)].append((c, kept))
    ordered = [bins[b] for b in sorted(bins)]
    xs = [sum(c for c, _ in group) / len(group) for group in ordered]
    ys = pooled([(sum(k for _, k in group) / len(group), len(group)) for group in ordered])
    return Calibration(decisions=len(items), knots=tuple(zip(xs, ys, strict=True)))


def _interpolate(knots: Sequence[tuple[float, float]], x: float) -> float:
    if x <= knots[0][0]:
        return knots[0][1]
    for (x0, y0), (x1, y1) in pairwise(knots):
        if x <= x1:
            if x1 <= x0:
                return y1
            value = y0 + (y1 - y0) * ((x - x0) / (x1 - x0))
            return min(y1, max(y0, value))  # rounding never leaves the segment
    return knots[-1][1]


@dataclass(frozen=True, slots=True)
class Calibrated:
    """A finding's stated confidence, calibrated: what the card and the report show."""

    stated: float
    value: float
    decisions: int

    def words(self) -> str:
        return (
            f"stated {self.stated:.2f}, calibrated {self.value:.2f} "
            f"from {self.decisions} decision{'s' if self.decisions != 1 else ''}"
        )


def calibrated(
    views: Iterable[NodeView], calibrations: Mapping[str, Calibration]
) -> dict[str, Calibrated]:
    """Node id → its calibrated confidence, for the findings whose reviewer has enough
    decisions (the others keep their stated confidence and are left out)."""
    out = {}
    for view in views:
        cal = calibrations.get(view.stream)
        if cal is not None and cal.active:
            out[view.id] = Calibrated(view.confidence, cal.apply(view.confidence), cal.decisions)
    return out


def with_calibrated(
    views: Iterable[NodeView], calibrations: Mapping[str, Calibration]
) -> list[NodeView]:
    """The views as the verdict reads them: each confidence through its reviewer's calibration,
    the stated one kept beside it (`stated_confidence`). Identity without calibrations."""
    values = list(views)
    mapped = calibrated(values, calibrations)
    return [
        replace(v, confidence=mapped[v.id].value, stated_confidence=v.confidence)
        if v.id in mapped
        else v
        for v in values
    ]
