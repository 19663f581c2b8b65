"""Disagreements between reviewers (DESIGN.md §3.3).

Two active nodes disagree when different agents (identity, not stream name) anchored them on the
same file with overlapping lines, and either their priorities are two or more levels apart or
one calls it a bug while the other calls it a suggestion. They are shown above the findings,
where a person's judgement is worth most, so the output order is fixed: by path, first line,
then node ids — whatever order the nodes arrive in.

Demoted duplicates take part: when two reviewers flag the same defect at P0 and P3, the merge
keeps P0, but the gap is still a disagreement a person should see.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations, groupby

from .types import NodeType, NodeView

PRIORITY_GAP = 2


@dataclass(frozen=True, slots=True)
class Disagreement:
    first: NodeView
    second: NodeView
    reasons: tuple[str, ...]

    @property
    def path(self) -> str:
        assert self.first.path is not None
        return self.first.path

    @property
    def ids(self) -> tuple[str, str]:
        return (self.first.id, self.second.id)

    @property
    def summary(self) -> str:
        return (
            f"{self.first.agent} ({self.first.priority} {self.first.type}) vs "
            f"{self.second.agent} ({self.second.priority} {self.second.type}) at "
            f"{self.first.location}: {'; '.join(self.reasons)}"
        )


def disagreement_reasons(a: NodeView, b: NodeView) -> tuple[str, ...]:
    """Why `a` and `b` disagree; empty when they do not (or cannot) disagree."""
    if a.agent == b.agent or not a.overlaps(b):
        return ()
    reasons = []
    gap = abs(a.priority.rank - b.priority.rank)
    if gap >= PRIORITY_GAP:
        high, low = sorted((a.priority, b.priority), key=lambda p: p.rank)
        reasons.append(f"priorities {gap} levels apart ({high} vs {low})")
    if {a.type, b.type} == {NodeType.BUG, NodeType.SUGGESTION}:
        reasons.append("one says bug, the other suggestion")
    return tuple(reasons)


def find_disagreements(nodes: Iterable[NodeView]) -> list[Disagreement]:
    """Every disagreeing pair among active anchored nodes, in a deterministic order."""
    candidates = sorted(
        (n for n in nodes if n.active and n.anchored),
        key=lambda n: (n.path or "", n.start_line or 0, n.end_line or 0, n.id),
    )
    found = []
    # Only nodes on the same file can overlap: pair within a file, not across the whole review.
    for _, same_file in groupby(candidates, key=lambda n: n.path):
        for a, b in combinations(list(same_file), 2):
            reasons = disagreement_reasons(a, b)
            if reasons:
                found.append(Disagreement(first=a, second=b, reasons=reasons))
    return found
