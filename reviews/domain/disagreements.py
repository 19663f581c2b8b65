"""Disagreements between reviewers, one per conflict.

Two positions disagree when different reviewers hold them on the same file with overlapping
lines, and either their priorities are two or more levels apart or one calls it a bug while the
other calls it a suggestion.

Disagreements are between *canonical* findings only: after the lead pass every defect is one
canonical node, and its demoted duplicates are the positions of the other reviewers who found
it. So a location (a cluster of canonical nodes with overlapping lines) yields at most one
disagreement, however many reviewers repeated the defect: its two sides are the two positions
that disagree most, each with every reviewer who holds it — "architecture, implementation,
security say P0 bug; bandit says P2 bug". When two reviewers flag the same defect at P0 and P3,
the merge keeps P0, but the gap is still a disagreement a person should see; deciding it sets
every node of the location to the chosen position, which is how the entry goes away.

They are shown above the findings, where a person's judgement is worth most, so the output order
is fixed: by path, first line, then node ids — whatever order the nodes arrive in.

Deciding for a side (`settle`) leaves the location one finding: every node of it takes the
chosen position, the canonical finding of that side is kept, and the location's other canonical
findings (the losing side's) are folded into it as duplicates, with every node that pointed at
them; the kept finding credits their reviewers. So the line has one card and one GitHub comment.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Literal

from .types import NodeType, NodeView, Priority, severity_for_priority

PRIORITY_GAP = 2

Position = tuple[Priority, NodeType]
# Where a finding sits: path, diff side, first and last line.
Span = tuple[str, str, int, int]
_Rank = tuple[int, int, tuple[int, int], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Disagreement:
    first: NodeView  # a node holding the stricter side's position
    second: NodeView
    reasons: tuple[str, ...]
    first_reviewers: tuple[str, ...] = ()
    second_reviewers: tuple[str, ...] = ()
    # The canonical nodes of the location, and every node (canonical or duplicate) a decision
    # moves: together they identify the conflict.
    canonical_ids: tuple[str, ...] = ()
    node_ids: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        assert self.first.path is not None
        return self.first.path

    @property
    def ids(self) -> tuple[str, str]:
        return (self.first.id, self.second.id)

    @property
    def key(self) -> str:
        """The location's first canonical node: what a person's decision refers to."""
        return self.canonical_ids[0] if self.canonical_ids else self.first.id

    @property
    def summary(self) -> str:
        first = ", ".join(self.first_reviewers or (self.first.agent,))
        second = ", ".join(self.second_reviewers or (self.second.agent,))
        return (
            f"{first} ({self.first.priority} {self.first.type}) vs "
            f"{second} ({self.second.priority} {self.second.type}) at "
            f"{self.first.location}: {'; '.join(self.reasons)}"
        )


def _position_reasons(a: Position, b: Position) -> tuple[str, ...]:
    reasons = []
    gap = abs(a[0].rank - b[0].rank)
    if gap >= PRIORITY_GAP:
        high, low = sorted((a[0], b[0]), key=lambda p: p.rank)
        reasons.append(f"priorities {gap} levels apart ({high} vs {low})")
    if {a[1], b[1]} == {NodeType.BUG, NodeType.SUGGESTION}:
        reasons.append("one says bug, the other suggestion")
    return tuple(reasons)


def disagreement_reasons(a: NodeView, b: NodeView) -> tuple[str, ...]:
    """Why `a` and `b` disagree; empty when they do not (or cannot) disagree."""
    if a.agent == b.agent or not a.overlaps(b):
        return ()
    return _position_reasons((a.priority, a.type), (b.priority, b.type))


def _strictness(position: Position) -> tuple[int, int]:
    return (position[0].rank, 0 if position[1] is NodeType.BUG else 1)


def find_disagreements(nodes: Iterable[NodeView]) -> list[Disagreement]:
    """At most one disagreement per location of active canonical findings, in a fixed order."""
    active = [n for n in nodes if n.active and n.anchored]
    canonicals = sorted(
        (n for n in active if n.duplicate_of is None),
        key=lambda n: (n.path or "", n.start_line or 0, n.end_line or 0, n.id),
    )
    canonical_ids = {n.id for n in canonicals}
    members: dict[str, list[NodeView]] = {n.id: [n] for n in canonicals}
    for node in active:
        if node.duplicate_of in canonical_ids:
            members[node.duplicate_of].append(node)

    found = []
    for cluster in _locations(canonicals):
        holders: dict[Position, list[NodeView]] = defaultdict(list)
        for canonical in cluster:
            for node in members[canonical.id]:
                holders[(node.priority, node.type)].append(node)
        best: tuple[_Rank, Position, Position, tuple[str, ...]] | None = None
        for a, b in combinations(sorted(holders, key=_strictness), 2):
            reasons = _position_reasons(a, b)
            agents_a = {n.agent for n in holders[a]}
            agents_b = {n.agent for n in holders[b]}
            if not reasons or agents_a == agents_b:
                continue  # one reviewer contradicting only itself is not a disagreement
            rank = (-abs(a[0].rank - b[0].rank), -len(reasons), _strictness(a), _strictness(b))
            if best is None or rank < best[0]:
                best = (rank, a, b, reasons)
        if best is None:
            continue
        _, a, b, reasons = best
        found.append(
            Disagreement(
                first=_representative(holders[a]),
                second=_representative(holders[b]),
                reasons=reasons,
                first_reviewers=tuple(sorted({n.agent for n in holders[a]})),
                second_reviewers=tuple(sorted({n.agent for n in holders[b]})),
                canonical_ids=tuple(sorted((c.id for c in cluster), key=_id_order)),
                node_ids=tuple(
                    sorted((n.id for c in cluster for n in members[c.id]), key=_id_order)
                ),
            )
        )
    found.sort(key=lambda d: (d.path, d.first.start_line or 0, min(d.ids), max(d.ids)))
    return found


DecidedSide = Literal["first", "second"]


@dataclass(frozen=True, slots=True)
class Settlement:
    """What deciding a disagreement for one side does to its location."""

    kept: str  # the location's one canonical finding from now on
    folded: tuple[str, ...]  # the location's other canonical findings, now duplicates of `kept`
    position: Position  # the chosen side's priority and type, which every node of it takes
    # Every node that changes, as it becomes (the rest of the round is untouched).
    nodes: tuple[NodeView, ...]


def settle(
    disagreement: Disagreement, side: DecidedSide, nodes: Mapping[str, NodeView]
) -> Settlement:
    """Decide `disagreement` for its `side`, given every node of the round by id.

    - Every node of the location (`node_ids`) takes the side's priority and type, its severity
      following the priority.
    - The kept finding is the canonical node holding the side's position, else the canonical
      node of the duplicate that holds it (`_representative` chose which).
    - Every other canonical node of the location is folded into the kept one: it becomes its
      duplicate, marked `folded_into` so a later lead pass does not split it out again, and so
      does every node that was a duplicate of it (whatever its status).
    - The kept finding credits every reviewer of what was folded into it.
    """
    chosen = disagreement.first if side == "first" else disagreement.second
    position: Position = (chosen.priority, chosen.type)
    kept_id = chosen.id if chosen.duplicate_of is None else chosen.duplicate_of
    if kept_id not in disagreement.canonical_ids:
        raise ValueError(f"{kept_id} is not a canonical node of the disagreement")
    folded = tuple(c for c in disagreement.canonical_ids if c != kept_id)
    folding = set(folded)
    moved = sorted(
        (n.id for n in nodes.values() if n.id in folding or n.duplicate_of in folding),
        key=_id_order,
    )
    location = set(disagreement.node_ids)
    kept = nodes[kept_id]
    credited = {*kept.credited_agents}
    for node_id in moved:
        credited |= {nodes[node_id].agent, *nodes[node_id].credited_agents}
    credited.discard(kept.agent)

    changed: list[NodeView] = []
    for node_id in sorted(location | set(moved) | {kept_id}, key=_id_order):
        before = nodes[node_id]
        after = before
        if node_id in location and (before.priority, before.type) != position:
            after = replace(
                after,
                priority=position[0],
                type=position[1],
                severity=severity_for_priority(position[0]),
            )
        if node_id in moved:
            after = replace(after, duplicate_of=kept_id, folded_into=kept_id)
        if node_id == kept_id:
            after = replace(after, credited_agents=tuple(sorted(credited)))
        if after != before:
            changed.append(after)
    return Settlement(kept=kept_id, folded=folded, position=position, nodes=tuple(changed))


def _id_order(node_id: str) -> tuple[int, str]:
    # Stored ids are integers: "9" before "10".
    return (int(node_id), node_id) if node_id.isdigit() else (0, node_id)


def _representative(holders: list[NodeView]) -> NodeView:
    """The canonical node when it holds the position, else the first duplicate by id."""
    return min(holders, key=lambda n: (n.duplicate_of is not None, _id_order(n.id)))


def overlap_clusters(spans: Sequence[Span]) -> list[list[int]]:
    """Indices of `spans` grouped by transitive overlap (same path and side, intersecting
    lines); members in input order, clusters by their first member.

    A sweep over each file's spans sorted by first line: O(n log n), where comparing every
    pair was quadratic (a 1,000-finding review spent most of its page time here)."""
    by_file: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (path, side, _start, _end) in enumerate(spans):
        by_file[(path, side)].append(i)
    clusters: list[list[int]] = []
    for members in by_file.values():
        current: list[int] = []
        reach = 0
        for i in sorted(members, key=lambda i: (spans[i][2], i)):
            start, end = spans[i][2], spans[i][3]
            if current and start <= reach:
                current.append(i)
                reach = max(reach, end)
            else:
                if current:
                    clusters.append(sorted(current))
                current, reach = [i], end
        if current:
            clusters.append(sorted(current))
    return sorted(clusters, key=lambda c: c[0])


def _span(node: NodeView) -> Span:
    assert node.path is not None and node.start_line is not None and node.end_line is not None
    return (node.path, str(node.side), node.start_line, node.end_line)


def _locations(canonicals: list[NodeView]) -> list[list[NodeView]]:
    """Clusters of canonical (anchored) nodes whose lines overlap (transitively), in input
    order."""
    return [[canonicals[i] for i in c] for c in overlap_clusters([_span(n) for n in canonicals])]


def contested_ids(positions: Iterable[tuple[str, str | None, Span]]) -> set[str]:
    """Of active anchored findings given as (id, duplicate_of, span), the ids
    `find_disagreements` can find anything among: those at a location holding more than one
    position (overlapping canonical findings, or a canonical finding with duplicates). The rest
    cannot disagree with anyone, so a caller may describe only these few in full."""
    canonicals: list[tuple[str, Span]] = []
    duplicates: dict[str, list[str]] = defaultdict(list)
    for node_id, duplicate_of, span in positions:
        if duplicate_of is None:
            canonicals.append((node_id, span))
        else:
            duplicates[duplicate_of].append(node_id)
    out: set[str] = set()
    for cluster in overlap_clusters([span for _id, span in canonicals]):
        members = [
            m for i in cluster for m in (canonicals[i][0], *duplicates.get(canonicals[i][0], ()))
        ]
        if len(members) > 1:
            out.update(members)
    return out


def contested(nodes: Iterable[NodeView]) -> list[NodeView]:
    """`contested_ids` over node views: `find_disagreements(contested(nodes))` equals
    `find_disagreements(nodes)`."""
    active = [n for n in nodes if n.active and n.anchored]
    ids = contested_ids((n.id, n.duplicate_of, _span(n)) for n in active)
    return [n for n in active if n.id in ids]
