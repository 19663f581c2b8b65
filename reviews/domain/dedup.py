"""Consolidation of findings: merge rules and severity floors.

The lead pass edits, it does not re-enumerate: `consolidate` takes every node of the round and
returns the same nodes, some rewritten, none added or dropped.

"Same location" and "same issue" are the matching rule of `matching.py`: overlapping lines of
the same file (or both unanchored), and the same defect class (rule family, CWE, or words such as
"SQL injection") or the same category with similar titles. It applies across every stream —
model reviewers, analyzers, the follow-up reviewer, CI — since the lead pass sees all the nodes
of the round. Titles with no meaningful words and no class never match: better two cards than a
wrong merge.

Rules, applied to active nodes only (resolved/dismissed ones pass through untouched, and an
active duplicate of a closed canonical node stays with it: a finding a person or the panel closed
must not come back as a fresh card through its duplicates):
- same location + same issue → one canonical node; the others are demoted duplicates
  (`duplicate_of`). Groups are the connected components of that relation, so the result does
  not depend on the order in which pairs are met. The canonical is the first by the total order
  (priority, higher confidence, longer body, id); it credits every reviewer, takes the longest
  body, the highest priority and severity, and the fix of a member if it had none;
- same location + same issue + *different fixes* (replacement lines or diff) → conflicting
  recommendations: one canonical per distinct fix, linked in `conflicting_fixes`; fix-less
  members join the group whose best member ranks first;
- same location, different issue → both kept, listed in `co_located`;
- same issue, different location → both kept, listed in `cross_referenced`.

A node a person folded into another when deciding a disagreement (`folded_into`) is not
matched again: it stays a duplicate, of its target's canonical node, untouched — the person's
decision, not the wording of two findings, made it one.

Severity floors (docs/domain-rules.md#severity-floors) run first, from the flags a reviewer sets
in triage: an externally exploitable security issue is at least P1; a hot-path performance issue
and a missing test on a critical path are at least P2; a style issue with no functional effect is
exactly P3.

`consolidate` is idempotent and order-independent; the property tests hold it to that.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from itertools import combinations

from . import matching
from .matching import SIMILARITY_THRESHOLD, defect_classes, same_issue, same_location
from .types import Category, NodeView, Priority, Severity, severity_for_priority

__all__ = ["SIMILARITY_THRESHOLD", "consolidate", "same_issue", "same_location", "similarity"]

Pair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Consolidation:
    nodes: tuple[NodeView, ...]
    co_located: tuple[Pair, ...]
    cross_referenced: tuple[Pair, ...]
    conflicting_fixes: tuple[Pair, ...]

    def node(self, node_id: str) -> NodeView:
        return next(n for n in self.nodes if n.id == node_id)

    @property
    def canonical(self) -> tuple[NodeView, ...]:
        return tuple(n for n in self.nodes if n.duplicate_of is None)


def apply_severity_floors(node: NodeView) -> NodeView:
    """Raise (or, for pure style, pin) a node's priority: the severity floors."""
    if node.category is Category.STYLE and not node.functional_effect:
        return replace(node, priority=Priority.P3, severity=Severity.LOW)
    floor = None
    if node.category is Category.SECURITY and node.exploitable_externally:
        floor = Priority.P1
    elif (node.category is Category.PERFORMANCE and node.hot_path) or (
        node.category is Category.TESTING and node.critical_path
    ):
        floor = Priority.P2
    if floor is None or node.priority.rank <= floor.rank:
        return node
    severity = min(node.severity, severity_for_priority(floor), key=lambda s: s.rank)
    return replace(node, priority=floor, severity=severity)


similarity = matching.title_similarity


def rank_key(node: NodeView) -> tuple[int, float, int, str, str]:
    """Total order for choosing a canonical node: most severe, surest, most detailed, then the
    reviewer's name and only last the id — ids follow arrival order, which parallel reviewers
    make random, and a re-run must pick the same canonical node."""
    return (node.priority.rank, -node.confidence, -len(node.body), node.agent, node.id)


def consolidate(nodes: Iterable[NodeView]) -> Consolidation:
    all_nodes = list(nodes)
    ids = [n.id for n in all_nodes]
    if len(set(ids)) != len(ids):
        raise ValueError("node ids must be unique")
    # Freeze what each node is about before any text is rewritten (idempotence).
    all_nodes = [
        replace(n, defect_classes=tuple(sorted(defect_classes(n)))) if n.active else n
        for n in all_nodes
    ]
    closed = {n.id for n in all_nodes if not n.active and n.duplicate_of is None}
    passive = [n for n in all_nodes if not n.active or n.duplicate_of in closed]
    live = [n for n in all_nodes if n.active and n.duplicate_of not in closed]
    pins = _fold_targets(live, {n.id for n in all_nodes})
    active = sorted(
        (apply_severity_floors(n) for n in live if n.id not in pins),
        key=lambda n: n.id,
    )

    components = _components(active)
    out: list[NodeView] = list(passive)
    representatives: list[tuple[int, NodeView]] = []
    conflicting: list[Pair] = []
    for index, component in enumerate(components):
        groups = _split_by_fix(component)
        merged = [_merge(group) for group in groups]
        for canonical, duplicates in merged:
            out.append(canonical)
            out.extend(duplicates)
            representatives.append((index, canonical))
        conflicting.extend(_pair(a.id, b.id) for (a, _), (b, _) in combinations(merged, 2))
    # Folded by a person: a duplicate of whatever its target's canonical node now is.
    canonical_of = {n.id: n.duplicate_of or n.id for n in out}
    out.extend(replace(n, duplicate_of=canonical_of[pins[n.id]]) for n in live if n.id in pins)

    co_located, cross = [], []
    for (ia, a), (ib, b) in combinations(representatives, 2):
        if ia == ib:
            continue  # same component: either merged or a conflicting recommendation
        if a.anchored and b.anchored and same_location(a, b):
            co_located.append(_pair(a.id, b.id))
        elif same_issue(a, b):
            cross.append(_pair(a.id, b.id))

    return Consolidation(
        nodes=tuple(sorted(out, key=lambda n: n.id)),
        co_located=tuple(sorted(co_located)),
        cross_referenced=tuple(sorted(cross)),
        conflicting_fixes=tuple(sorted(conflicting)),
    )


def _fold_targets(live: list[NodeView], present: set[str]) -> dict[str, str]:
    """Active nodes a person folded into another → the node their folds end in (a fold of a
    folded node is followed). Folds that loop back are ignored: those nodes are matched like
    any other."""
    asked = {
        n.id: n.folded_into
        for n in live
        if n.folded_into is not None and n.folded_into in present and n.folded_into != n.id
    }
    targets: dict[str, str] = {}
    for node_id, target in asked.items():
        seen = {node_id}
        while target in asked and target not in seen:
            seen.add(target)
            target = asked[target]
        if target not in asked:
            targets[node_id] = target
    return targets


def _components(nodes: list[NodeView]) -> list[list[NodeView]]:
    parent = list(range(len(nodes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in combinations(range(len(nodes)), 2):
        if same_location(nodes[i], nodes[j]) and same_issue(nodes[i], nodes[j]):
            parent[find(i)] = find(j)
    groups: dict[int, list[NodeView]] = defaultdict(list)
    for i, node in enumerate(nodes):
        groups[find(i)].append(node)
    return sorted(groups.values(), key=lambda g: min(n.id for n in g))


def _fix_key(node: NodeView) -> tuple[tuple[str, ...] | None, str | None] | None:
    if node.replacement_lines is None and not node.diff:
        return None
    return (node.replacement_lines, node.diff or None)


def _split_by_fix(component: list[NodeView]) -> list[list[NodeView]]:
    by_key: dict[object, list[NodeView]] = defaultdict(list)
    fixless = []
    for node in component:
        key = _fix_key(node)
        if key is None:
            fixless.append(node)
        else:
            by_key[key].append(node)
    if len(by_key) <= 1:
        return [component]
    groups = sorted(by_key.values(), key=lambda g: min(rank_key(n) for n in g))
    groups[0] = groups[0] + fixless
    return groups


def _merge(group: list[NodeView]) -> tuple[NodeView, list[NodeView]]:
    ordered = sorted(group, key=rank_key)
    canonical, rest = ordered[0], ordered[1:]
    if not rest:
        return replace(canonical, duplicate_of=None), []
    agents = {n.agent for n in ordered} | {a for n in ordered for a in n.credited_agents}
    longest = max(ordered, key=lambda n: len(n.body))  # max() keeps the first on ties
    fixed = next((n for n in ordered if _fix_key(n) is not None), None)
    merged = replace(
        canonical,
        duplicate_of=None,
        credited_agents=tuple(sorted(agents - {canonical.agent})),
        body=longest.body,
        severity=min((n.severity for n in ordered), key=lambda s: s.rank),
    )
    if _fix_key(canonical) is None and fixed is not None:
        merged = replace(
            merged,
            replacement_lines=fixed.replacement_lines,
            diff=fixed.diff,
            fix_prompt=canonical.fix_prompt or fixed.fix_prompt,
        )
    duplicates = [replace(n, duplicate_of=canonical.id) for n in rest]
    return merged, duplicates


def _pair(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)
