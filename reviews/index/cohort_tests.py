"""Tests beside their code: which changed code a group of changed test files exercises, and how
near it is. The rule is stated in cohorts; this module follows the index's references.

- Directly (distance 0): a resolved reference of the tests names a changed symbol, anything
  inside one, or anything in a changed file of the group.
- Through unchanged code (distance 1 to `MAX_HOPS`): a test often exercises changed code through
  a public type that did not change (a facade: `new Gson().fromJson(…)` reaching a changed type
  adapter). From what the tests' references resolve to in unchanged files, the index's resolved
  references are followed, one unchanged file per hop. A reference to a top-level type (or a
  module) stands for its whole file, imports included: its methods are called through instances,
  which the index does not resolve. A reference to a method, a function or a nested type stands
  for its body, and for the bodies of what it calls in its own file (a public method's private
  helpers), without counting a hop. Only resolved references are followed: nothing is matched
  by name, and a changed file is never passed through (its own cohort is linked directly).
- By name alone (`BY_NAME`, farther than any resolved link): a call through an object (a
  fixture) names a changed method or function.

Of several groups linked, a test file reads with the nearest (a link by name alone is the
farthest), then the one its changed lines use most, then the one it uses most (the references
reaching it), each use weighed by how few of the change's test files the group is linked to: a
test of the JSON reader that also builds a Gson, as most tests do, reads with the reader.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from reviews.index.cohort_graph import ChangeUnit, CohortGraph
from reviews.index.cohort_types import BlastRadius
from reviews.index.model import CALL, CLASS, INTERFACE, MODULE, Reference

MAX_HOPS = 2  # unchanged files between a test and the changed code it exercises
BY_NAME = MAX_HOPS + 1  # a link by name alone comes after every link the index resolved


def attach_tests(
    graph: CohortGraph,
    code_groups: list[list[ChangeUnit]],
    test_groups: list[list[ChangeUnit]],
    radius: list[BlastRadius],
) -> list[ChangeUnit]:
    """Add each test file to the code group it is linked to best (in place); returns the units
    of the tests linked to nothing. A file of a test component linked to nothing on its own
    (a changed fixture, a helper) goes where the component as a whole is linked best."""
    files: list[tuple[list[ChangeUnit], int]] = []  # (a file's units, its component)
    for number, component in enumerate(test_groups):
        by_file: dict[str, list[ChangeUnit]] = defaultdict(list)
        for unit in component:
            by_file[unit.path].append(unit)
        files += [(units, number) for _, units in sorted(by_file.items())]
    links = [_links(graph, units, code_groups) for units, _ in files]
    common = [_links(graph, component, code_groups) for component in test_groups]
    # How many test files each group is linked to: a group most tests use (the facade, a
    # utility type) says less about one test than a group few tests use.
    users = Counter(i for linked in links for i in linked)
    added: dict[int, list[ChangeUnit]] = defaultdict(list)
    unlinked: list[ChangeUnit] = []
    for (units, number), linked in zip(files, links, strict=True):
        home = _best(linked or common[number], users, radius)
        (unlinked if home is None else added[home]).extend(units)
    for i, grown in sorted(added.items()):
        code_groups[i] = code_groups[i] + grown
    return unlinked


def _links(
    graph: CohortGraph, tests: list[ChangeUnit], code_groups: list[list[ChangeUnit]]
) -> dict[int, tuple[int, int, int]]:
    reach = TestReach(graph, tests)
    return {i: link for i, group in enumerate(code_groups) if (link := reach.link(group))}


def _best(
    linked: dict[int, tuple[int, int, int]], users: Counter[int], radius: list[BlastRadius]
) -> int | None:
    """The nearest linked group, then the one the changed lines use most, then the one used
    most (each resolved use weighed by how few test files the group is linked to), then the
    highest blast radius."""

    def rank(i: int) -> tuple[float, ...]:
        hop, changed_uses, uses = linked[i]
        share = max(users[i], 1) if hop != BY_NAME else 1  # names alone: counted, not weighed
        return (hop, -changed_uses / share, -uses / share, -radius[i].definitions, i)

    return min(linked, key=rank) if linked else None


class TestReach:
    """What one group of test files reaches: the targets of its own references (hop 0), then of
    the unchanged code they name, file by file (hops 1 to `MAX_HOPS`)."""

    def __init__(self, graph: CohortGraph, tests: list[ChangeUnit]) -> None:
        self.graph = graph
        self.calls: Counter[str] = Counter()  # unresolved `obj.name()`: the names
        changed_lines = {line for u in tests for line in u.lines}
        direct: list[tuple[str, bool]] = []  # (target, made on a changed line)
        for path in sorted({u.path for u in tests}):
            for index in (graph.head, graph.base):
                for ref in index.references_by_path.get(path, ()) if index is not None else ():
                    if ref.target is not None:
                        direct.append((ref.target, (ref.path, ref.line) in changed_lines))
                    elif ref.kind == CALL and "." in ref.name:
                        self.calls[ref.name.rpartition(".")[2]] += 1
        # Per hop: (path, the symbol and those enclosing it, made on a changed line) of each
        # target reached.
        self.levels = [self._level(direct)]
        frontier = {t for t, _ in direct if self._passable(t)}
        seen = set(frontier)
        for _hop in range(MAX_HOPS):
            if not frontier:
                break
            reached = self._through(frontier)
            self.levels.append(self._level([(t, False) for t in sorted(reached)]))
            frontier = {t for t in reached if t not in seen and self._passable(t)}
            seen |= frontier

    def link(self, code: list[ChangeUnit]) -> tuple[int, int, int] | None:
        """(how many unchanged files lie between the tests and `code`, 0 when they use it
        directly, `BY_NAME` when only calls through objects match it by name; how many of the
        references reaching it there are on the tests' changed lines; how many in all), or None
        when they do not reach it."""
        symbols = {s for u in code for s in u.symbols}
        paths = {u.path for u in code}
        names = {
            d.name
            for q in symbols
            if (d := self.graph.lookup(q)) is not None
            and not (d.kind == MODULE and d.parent is None)
        }
        for hop, targets in enumerate(self.levels):
            uses = [changed for path, above, changed in targets if path in paths or above & symbols]
            if uses:
                return hop, sum(uses), len(uses)
        named = sum(n for name, n in self.calls.items() if name in names)
        return (BY_NAME, 0, named) if named else None

    def _level(self, targets: list[tuple[str, bool]]) -> list[tuple[str, frozenset[str], bool]]:
        return [
            (found.path, frozenset(self.graph.ancestors(t)), changed)
            for t, changed in targets
            if (found := self.graph.lookup(t)) is not None
        ]

    def _passable(self, qualname: str) -> bool:
        found = self.graph.head.definitions.get(qualname)
        return found is not None and found.path not in self.graph.changed_paths

    def _through(self, frontier: set[str]) -> set[str]:
        """Targets in other files of the references the unchanged definitions of `frontier`
        make (a definition calling one of its own file counts that one's too)."""
        reached: set[str] = set()
        pending = sorted(frontier)
        visited = set(pending)
        while pending:
            qualname = pending.pop()
            for ref in self._made_by(qualname):
                target = self.graph.head.definitions.get(ref.target or "")
                if target is None:
                    continue
                if target.path != ref.path:
                    reached.add(target.qualname)
                elif target.qualname not in visited:
                    visited.add(target.qualname)
                    pending.append(target.qualname)
        return reached

    def _made_by(self, qualname: str) -> list[Reference]:
        found = self.graph.head.definitions[qualname]
        refs = self.graph.head.references_by_path.get(found.path, ())
        parent = self.graph.head.definitions.get(found.parent or "")
        whole_file = found.kind == MODULE or (
            found.kind in (CLASS, INTERFACE) and parent is not None and parent.kind == MODULE
        )
        if whole_file:
            return list(refs)
        prefix = qualname + "."
        return [r for r in refs if r.source == qualname or r.source.startswith(prefix)]
