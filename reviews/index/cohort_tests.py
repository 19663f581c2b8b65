"""Tests beside their code: which changed code a group of changed test files exercises, and how
near it is. The rule is stated in cohorts; this module follows the index's references.

- Directly (distance 0): a resolved reference of the tests names a definition the change
  touched, anything inside one, or a type or function enclosing one (a class whose
  implementation changed, built with `new` or called statically).
- Through what did not change (distance 1 to `MAX_HOPS`): a test often exercises changed code
  through a public type that did not change (a facade: `new Gson().fromJson(…)` reaching a
  changed type adapter), or through an untouched part of a changed file (the `ky` instance a
  changed index.ts builds, reaching the changed client behind it). From what the tests'
  references resolve to there, the index's resolved references are followed, one file per
  hop. A reference to a top-level type (or a module) stands for its whole file; a reference
  to a method, a function or a nested type stands for its body, and for the bodies of what it
  calls in its own file (a public method's private helpers), without counting a hop. Imports
  passed through are not uses (a re-export is not a call). Only resolved references are
  followed: nothing is matched by name.
- Passing through an untouched function or type of a changed file (hop 1 on), the touched
  definitions of its own file it uses are reached with it (`NewRouter` → `NewMux` → the changed
  `Mux` it builds), as within any one file.
- A use of an untouched part of a changed file (a module imported whole, an unchanged
  function beside a changed one), or of a changed interface with nothing inside it (a
  TypeScript interface or type alias: a shape the compiler checks, not code a test runs),
  links the tests to that file one hop farther than the use, and after touched code reached
  at the same distance.
- By name alone (`BY_NAME`, farther than any resolved link): a call through an object (a
  fixture) names a changed method or function.

Of several groups linked, a test file reads with the nearest (a touched definition before the
rest of a changed file; a link by name alone the farthest), then the one its changed lines use
most, each use weighed by how few of the change's test files use its file directly (a test of
ConstructorConstructor that also builds eight TypeTokens, as most tests do, reads with the
ConstructorConstructor), then the one it uses most, each use weighed by how few test files the
group is linked to.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from reviews.index.cohort_graph import ChangeUnit, CohortGraph
from reviews.index.cohort_types import BlastRadius
from reviews.index.model import CALL, CLASS, IMPORT, INTERFACE, MODULE, Reference

MAX_HOPS = 2  # unchanged files between a test and the changed code it exercises
# A link by name alone comes after every link the index resolved, an untouched part of a
# changed file at the farthest hop included (counted one hop farther).
BY_NAME = MAX_HOPS + 2


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
    touched = Touched(graph, code_groups)
    reaches = [TestReach(graph, touched, units) for units, _ in files]
    links = [_links(reach, code_groups) for reach in reaches]
    common = [_links(TestReach(graph, touched, c), code_groups) for c in test_groups]
    # How many test files use each changed file directly, and are linked to each group: a file
    # or a group most tests use (the facade, a utility type) says less about one test than one
    # few tests use.
    file_users = Counter(p for reach in reaches for p in reach.direct_paths)
    group_users = Counter(i for linked in links for i in linked)
    added: dict[int, list[ChangeUnit]] = defaultdict(list)
    unlinked: list[ChangeUnit] = []
    for (units, number), linked in zip(files, links, strict=True):
        home = _best(linked or common[number], file_users, group_users, radius)
        (unlinked if home is None else added[home]).extend(units)
    for i, grown in sorted(added.items()):
        code_groups[i] = code_groups[i] + grown
    return unlinked


@dataclass(frozen=True, slots=True)
class Link:
    """How a group of tests reaches a code group: `hop` unchanged files (or unchanged parts of
    changed files) between them, `BY_NAME` when only calls through objects match it by name;
    `touched` when what they use there is a definition the change touched (or a type whose
    members it touched), not only something else in a changed file; per changed file used,
    (uses on the tests' changed lines, uses in all)."""

    hop: int
    touched: bool
    uses: dict[str, tuple[int, int]]


def _links(reach: TestReach, groups: list[list[ChangeUnit]]) -> dict[int, Link]:
    return {i: link for i, group in enumerate(groups) if (link := reach.link(group))}


def _best(
    linked: dict[int, Link],
    file_users: Counter[str],
    group_users: Counter[int],
    radius: list[BlastRadius],
) -> int | None:
    """The nearest linked group, a touched definition before the rest of a changed file at
    the same distance; then the one the changed lines use most, each use weighed by how few
    test files use its file; then the one used most, weighed by how few test files the group
    is linked to; then the highest blast radius."""

    def rank(i: int) -> tuple[float, ...]:
        link = linked[i]
        uses = sum(n for _, n in link.uses.values())
        if link.hop == BY_NAME:  # names alone: counted, not weighed
            return (link.hop, 0, 0, -uses, -radius[i].definitions, i)
        changed = sum(c / max(file_users[p], 1) for p, (c, _) in link.uses.items())
        return (
            link.hop,
            not link.touched,
            -changed,
            -uses / max(group_users[i], 1),
            -radius[i].definitions,
            i,
        )

    return min(linked, key=rank) if linked else None


def _count(uses: list[tuple[str, bool]]) -> dict[str, tuple[int, int]]:
    """Per file: (uses on the tests' changed lines, uses in all)."""
    counts: dict[str, tuple[int, int]] = {}
    for path, changed in uses:
        before = counts.get(path, (0, 0))
        counts[path] = (before[0] + changed, before[1] + 1)
    return counts


class Touched:
    """The definitions the change touched, and the types and functions enclosing them (a class
    whose implementation changed): a use of these is a use of the change itself. A touched
    module (an import or another module-level line changed) does not make all of its file
    touched."""

    def __init__(self, graph: CohortGraph, code_groups: list[list[ChangeUnit]]) -> None:
        self.graph = graph
        self.symbols = {s for group in code_groups for u in group for s in u.symbols}
        owners = {d.parent for d in graph.head.definitions.values()}
        self.declarations = {
            q for q, d in graph.head.definitions.items() if d.kind == INTERFACE and q not in owners
        }
        self.enclosing = {
            a
            for s in self.symbols
            for a in graph.ancestors(s)
            if (d := graph.lookup(a)) is not None and d.kind != MODULE
        }

    def runs(self, qualname: str) -> bool:
        """`qualname` is touched code a test runs: not an interface with nothing inside it (a
        TypeScript interface or type alias), which only declares a shape the compiler checks."""
        return self.covers(qualname) and qualname not in self.declarations

    def covers(self, qualname: str) -> bool:
        """`qualname` is touched, inside a touched definition, or encloses one. A module never
        is: importing one uses its file, not what changed in it."""
        found = self.graph.lookup(qualname)
        if found is None or found.kind == MODULE:
            return False
        if qualname in self.enclosing or qualname in self.symbols:
            return True
        for above in self.graph.ancestors(qualname)[1:]:
            found = self.graph.lookup(above)
            if found is None or found.kind == MODULE:
                return False
            if above in self.symbols:
                return True
        return False


class TestReach:
    """What one group of test files reaches: the targets of its own references (hop 0), then of
    the unchanged code they name, file by file (hops 1 to `MAX_HOPS`). An untouched definition
    of a changed file is passed through like unchanged code (the `ky` instance a module
    exports, reaching the changed client behind it); reached that way (hop 1 on), it also
    stands for the touched definitions of its own file it uses (`NewMux` for the changed `Mux`
    it builds), which make the link a touched one without counting as uses themselves."""

    def __init__(self, graph: CohortGraph, touched: Touched, tests: list[ChangeUnit]) -> None:
        self.graph = graph
        self.touched = touched
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
        # Per hop: (path, target, made on a changed line or reached from one) of each target.
        self.levels = [self._level(direct)]
        self.beside: set[str] = set()  # touched code reached within a file: not a use itself
        self.direct_paths = {path for path, _, _ in self.levels[0]}
        frontier = {t: c for t, c in direct if self._passable(t)}
        seen = set(frontier)
        for _hop in range(MAX_HOPS):
            if not frontier:
                break
            reached = self._through({t for t, c in frontier.items() if c})
            also = self._through({t for t, c in frontier.items() if not c}) - reached
            targets = [(t, True) for t in sorted(reached)] + [(t, False) for t in sorted(also)]
            beside = self._beside(targets)
            self.beside.update(t for t, _ in beside)
            self.levels.append(self._level(targets + beside))
            frontier = {t: c for t, c in targets if t not in seen and self._passable(t)}
            seen |= frontier.keys()

    def link(self, code: list[ChangeUnit]) -> Link | None:
        """How the tests reach `code`: the nearest hop where they use a touched definition of
        it, else the nearest where they use anything in its files, counted one hop farther
        (they use the change through what did not change), else by name, else None."""
        symbols = {s for u in code for s in u.symbols}
        paths = {u.path for u in code}
        loose: Link | None = None
        for hop, targets in enumerate(self.levels):
            mine = [(p, t, c) for p, t, c in targets if p in paths]
            uses = _count([(p, c) for p, t, c in mine if t not in self.beside])
            ran = _count([(p, c) for p, t, c in mine if self.touched.runs(t)])
            if ran and (loose is None or hop <= loose.hop):
                return Link(hop, True, uses or ran)
            if uses and loose is None:
                loose = Link(hop + 1, False, uses)
        if loose is not None:
            return loose
        names = {
            d.name
            for q in symbols
            if (d := self.graph.lookup(q)) is not None
            and not (d.kind == MODULE and d.parent is None)
        }
        named = sum(n for name, n in self.calls.items() if name in names)
        return Link(BY_NAME, False, {"": (0, named)}) if named else None

    def _level(self, targets: list[tuple[str, bool]]) -> list[tuple[str, str, bool]]:
        return [
            (found.path, t, changed)
            for t, changed in targets
            if (found := self.graph.lookup(t)) is not None
        ]

    def _beside(self, targets: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """The touched definitions of its own file each untouched function or type of a
        changed file uses (an unchanged constructor building its changed type). Not for the
        tests' own references: a test calling an unchanged helper of a changed file is linked
        to that file one hop farther, not to the helper's changed callees (measured on the
        corpus: that made tree_test.go read with mux.go and SubsetTest with Gson)."""
        out = []
        for qualname, changed in targets:
            found = self.graph.head.definitions.get(qualname)
            if found is None or found.kind == MODULE or self.touched.covers(qualname):
                continue
            if found.path not in self.graph.changed_paths:
                continue
            for ref in self._made_by(qualname):
                target = self.graph.head.definitions.get(ref.target or "")
                same_file = target is not None and target.path == found.path
                if same_file and self.touched.covers(ref.target or ""):
                    out.append((ref.target or "", changed))
        return out

    def _passable(self, qualname: str) -> bool:
        found = self.graph.head.definitions.get(qualname)
        if found is None:
            return False
        return found.path not in self.graph.changed_paths or not self.touched.covers(qualname)

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
                if target is None or ref.kind == IMPORT:  # a re-export is not a use
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
