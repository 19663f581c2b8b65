"""The graph side of cohorts: which symbols each changed hunk touches, how touched symbols connect
(references one hop towards dependents, same-file links, manifests to the cohorts that import
their dependencies), and a connected group turned into a
cohort with its edges, blast radius and reading order. The rules are stated in cohorts, which
groups the change and falls back to paths without an index.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reviews.domain.indexed_files import is_test_path
from reviews.index.cohort_types import (
    GRAPH_LABEL,
    BlastRadius,
    Cohort,
    Edge,
    FilePreview,
    ReadingStep,
    cohort_key,
)
from reviews.index.manifest_parse import MANIFEST
from reviews.index.mermaid import DiagramNode, flowchart
from reviews.index.model import (
    CLASS,
    IMPORT,
    INHERIT,
    INTERFACE,
    METHOD,
    MODULE,
    CodeIndex,
    Definition,
    Reference,
)
from reviews.index.resolution import ResolverCache, unresolved_imports
from reviews.sources.diffs import ChangedFile, Hunk

# Interfaces and base types are read before what implements them (the guided reading order).
_KIND_RANK = {INTERFACE: 0, CLASS: 1, MODULE: 3}


_TYPES = (CLASS, INTERFACE)


_JSON_KEY = re.compile(r'"([^"]+)"\s*:')


_GO_REQUIRE = re.compile(r"\s*(?:require\s+)?([\w.~-]+\.[\w.~/-]+)\s+v\d")


@dataclass(frozen=True, slots=True)
class ChangeUnit:
    """One hunk (or a whole file changed without hunks) and the symbols it touches."""

    path: str
    hunk: Hunk | None
    symbols: frozenset[str]
    lines: frozenset[tuple[str, int]]  # (path, line) of each changed line, head or base side


class CohortGraph:
    def __init__(self, head: CodeIndex, base: CodeIndex | None, changed_paths: set[str]) -> None:
        self.head = head
        self.base = base
        self.changed_paths = changed_paths
        self._resolver = ResolverCache(head)
        # The head's definition of a name, else the base's: one table, asked ~1M times on a
        # change of a thousand files.
        self._definitions = {**(base.definitions if base is not None else {}), **head.definitions}
        # Grouping, describing and measuring each cohort ask for the same symbols' dependents.
        self._dependents_of: dict[tuple[str, bool], tuple[Reference, ...]] = {}

    def lookup(self, qualname: str) -> Definition | None:
        return self._definitions.get(qualname)

    # touching ---------------------------------------------------------------------------------

    def units_for(self, changed: ChangedFile) -> list[ChangeUnit]:
        new_path = changed.new_path
        old_path = changed.old_path
        in_head = new_path is not None and _is_code(self.head, new_path)
        in_base = self.base is not None and old_path is not None and _is_code(self.base, old_path)
        if not in_head and not in_base:
            return []
        if not changed.hunks:
            module = self._module(new_path if in_head else old_path, at_head=in_head)
            return [ChangeUnit(changed.path, None, frozenset({module}), frozenset())]
        units = []
        for hunk in changed.hunks:
            changed_lines = [(i, ln) for i, ln in enumerate(hunk.lines) if ln.kind in "+-"]
            # Blank lines added or removed between definitions touch nothing, unless they are
            # all the hunk changes.
            meaningful = [(i, ln) for i, ln in changed_lines if ln.text.strip()] or changed_lines
            touched: set[str] = set()
            lines: set[tuple[str, int]] = set()
            for position, line in meaningful:
                if line.kind == "+" and in_head and line.new_line is not None:
                    touched.add(self._at(self.head, new_path, line.new_line))
                    lines.add((new_path or "", line.new_line))
                elif line.kind == "-" and line.old_line is not None:
                    lines.add((old_path or "", line.old_line))
                    if in_base and self.base is not None:
                        touched.add(self._at(self.base, old_path, line.old_line))
                    elif in_head:
                        touched.add(self._deleted_at_head(new_path, hunk, position))
            touched.discard("")
            if touched:
                units.append(ChangeUnit(changed.path, hunk, frozenset(touched), frozenset(lines)))
        return units

    def _module(self, path: str | None, *, at_head: bool) -> str:
        index = self.head if at_head or self.base is None else self.base
        record = index.files.get(path or "")
        return record.module if record is not None else ""

    @staticmethod
    def _at(index: CodeIndex, path: str | None, line: int) -> str:
        if path is None:
            return ""
        found = index.innermost(path, line)
        if found is not None:
            return found.qualname
        record = index.files.get(path)
        return record.module if record is not None else ""

    def _deleted_at_head(self, path: str | None, hunk: Hunk, position: int) -> str:
        before = next(
            (ln.new_line for ln in reversed(hunk.lines[:position]) if ln.new_line is not None),
            None,
        )
        after = next((ln.new_line for ln in hunk.lines[position:] if ln.new_line is not None), None)
        if path is None:
            return ""
        anchors = [self._at(self.head, path, n) for n in (before, after) if n is not None]
        if not anchors:
            return self._module(path, at_head=True)
        return self._common_ancestor(anchors) or self._module(path, at_head=True)

    def ancestors(self, qualname: str) -> list[str]:
        chain = []
        current: str | None = qualname
        while current is not None:
            chain.append(current)
            found = self.lookup(current)
            current = found.parent if found is not None else None
        return chain

    def _common_ancestor(self, qualnames: list[str]) -> str | None:
        first = self.ancestors(qualnames[0])
        others = [set(self.ancestors(q)) for q in qualnames[1:]]
        return next((q for q in first if all(q in other for other in others)), None)

    # connecting -----------------------------------------------------------------------------

    def _dependents(self, qualname: str, *, seed: bool) -> tuple[Reference, ...]:
        found = self._dependents_of.get((qualname, seed))
        if found is None:
            found = self._dependents_of[qualname, seed] = tuple(
                self._find_dependents(qualname, seed)
            )
        return found

    def _find_dependents(self, qualname: str, seed: bool) -> list[Reference]:
        """Direct references to `qualname`. For a changed symbol (`seed`) also: for a module,
        references to anything in its file; for a method, references to its class (calls
        through instances are not resolved, so users of the class stand in for them) and
        the methods overriding it in direct subclasses."""
        refs: list[Reference] = []
        for index in (self.head, self.base):
            found = index.definitions.get(qualname) if index is not None else None
            if index is None or found is None:
                continue
            targets = [qualname]
            if seed and found.kind == MODULE and found.parent is None:
                targets = [d.qualname for d in index.definitions_in(found.path)]
            for target in targets:
                refs.extend(index.dependents.get(target, ()))
            owner = index.definitions.get(found.parent or "")
            if seed and found.kind == METHOD and owner is not None and owner.kind in _TYPES:
                for ref in index.dependents.get(owner.qualname, ()):
                    refs.append(ref)
                    override = index.definitions.get(f"{ref.source}.{found.name}")
                    if ref.kind == INHERIT and override is not None:
                        refs.append(
                            Reference(
                                override.qualname,
                                INHERIT,
                                qualname,
                                override.path,
                                override.start_line,
                                qualname,
                            )
                        )
        return refs

    def _owner(self, source: str, touched: set[str]) -> str | None:
        """`source` if touched, else the touched class/function it is nested in. Enclosing
        modules do not count: a module-level change is not a change to every function."""
        if source in touched:
            return source
        found = self.lookup(source)
        current = found.parent if found is not None and found.kind != MODULE else None
        while current is not None:
            found = self.lookup(current)
            if found is None or found.kind == MODULE:
                return None
            if current in touched:
                return current
            current = found.parent
        return None

    def components(self, units: list[ChangeUnit]) -> list[list[ChangeUnit]]:
        touched = {s for u in units for s in u.symbols}
        parent = {s: s for s in touched}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)

        for unit in units:
            first, *rest = sorted(unit.symbols)
            for other in rest:
                union(first, other)
        for group in self._same_file_groups(touched):
            for other in group[1:]:
                union(group[0], other)
        changed_lines = {line for u in units for line in u.lines}
        # Tests join code afterwards, one cohort each (cohort_tests): not here, where a test
        # using two changed parts would make them one.
        in_tests = {s: is_test_path(u.path) for u in units for s in u.symbols}
        for symbol in sorted(touched):
            for ref in self._dependents(symbol, seed=True):
                owner = self._owner(ref.source, touched)
                if owner is None or in_tests[owner] != in_tests[symbol]:
                    continue
                found = self.lookup(owner)
                # A module-level statement joins only if it is itself a changed line: an edited
                # constant does not tie the file's imports to the change.
                is_module = found is not None and found.kind == MODULE and found.parent is None
                if is_module and (ref.path, ref.line) not in changed_lines:
                    continue
                union(symbol, owner)
        groups: dict[str, list[ChangeUnit]] = defaultdict(list)
        for unit in units:
            groups[find(next(iter(unit.symbols)))].append(unit)
        return list(groups.values())

    def blast_radius_of(self, units: list[ChangeUnit]) -> BlastRadius:
        return self._blast_radius({s for u in units for s in u.symbols})

    def _same_file_groups(self, touched: set[str]) -> list[list[str]]:
        """Touched symbols a file's own definitions connect: members of one class (the class
        too, when touched), and callers of one untouched helper of their file."""
        groups: dict[str, list[str]] = defaultdict(list)
        for symbol in sorted(touched):
            found = self.lookup(symbol)
            if found is None or found.kind == MODULE:
                continue
            current = self.lookup(found.parent or "")
            while current is not None and current.kind not in _TYPES and current.kind != MODULE:
                current = self.lookup(current.parent or "")
            if current is not None and current.kind in _TYPES:
                groups[current.qualname].append(symbol)
                if current.qualname in touched:
                    groups[current.qualname].append(current.qualname)
        paths = {d.path for q in touched if (d := self.head.definitions.get(q)) is not None}
        for path in sorted(paths):
            for ref in self.head.references_by_path.get(path, ()):
                target = self.head.definitions.get(ref.target or "")
                if target is None or target.path != path or target.kind == MODULE:
                    continue
                owner = self._owner(ref.source, touched)
                if owner is not None and ref.target not in touched:
                    groups[f"helper {ref.target}"].append(owner)
        return [sorted(set(g)) for g in groups.values() if len(set(g)) > 1]

    def attach_manifests(
        self,
        config: Sequence[ChangedFile],
        groups: list[list[ChangeUnit]],
        radius: list[BlastRadius],
    ) -> dict[int, list[ChangedFile]]:
        """group index → manifests to read with it: a dependency changed in package.json or
        go.mod that the group's files import (the highest blast radius when several)."""
        out: dict[int, list[ChangedFile]] = defaultdict(list)
        for changed in config:
            dependencies = self._changed_dependencies(changed)
            if not dependencies:
                continue
            linked = [i for i, g in enumerate(groups) if self._imports_any(g, dependencies)]
            if linked:
                best = min(linked, key=lambda i: (-radius[i].definitions, -radius[i].files, i))
                out[best].append(changed)
        return out

    def _changed_dependencies(self, changed: ChangedFile) -> set[str]:
        record = self.head.files.get(changed.new_path or "")
        if record is None or record.language != MANIFEST:
            return set()
        lines = [ln.text for h in changed.hunks for ln in h.lines if ln.kind in "+-"]
        if record.path.endswith("package.json"):
            known = {b.target for b in record.bindings if b.local == "dependency"}
            return {m for line in lines for m in _JSON_KEY.findall(line)} & known
        if record.path.endswith("go.mod"):
            return {m.group(1) for line in lines if (m := _GO_REQUIRE.match(line)) is not None}
        return set()

    def _imports_any(self, group: list[ChangeUnit], dependencies: set[str]) -> bool:
        for path in sorted({u.path for u in group}):
            for ref in self.head.references_by_path.get(path, ()):
                spec = ref.name.partition("#")[0]
                if ref.kind == IMPORT and any(
                    spec == d or spec.startswith(d + "/") for d in dependencies
                ):
                    return True
        return False

    # describing -----------------------------------------------------------------------------

    def cohort(self, units: list[ChangeUnit], attached: Sequence[ChangedFile] = ()) -> Cohort:
        symbols = sorted({s for u in units for s in u.symbols})
        symbol_set = set(symbols)
        code_paths = sorted({u.path for u in units})
        paths = sorted({*code_paths, *(f.path for f in attached)})
        context: set[str] = set()
        for symbol in symbols:
            for ref in self._dependents(symbol, seed=True):
                source = self.lookup(ref.source)
                if (
                    source is not None
                    and source.kind != MODULE  # an import line is not a caller worth showing
                    and source.path in self.changed_paths
                    and self._owner(ref.source, symbol_set) is None
                ):
                    context.add(ref.source)
        edges = self._edges(symbol_set | context)
        order = self._reading_order(units, edges)
        nodes_by_path: dict[str, list[DiagramNode]] = defaultdict(list)
        for step in order:
            nodes_by_path[step.path].extend(
                DiagramNode(q, self._label(q, step.path)) for q in step.symbols
            )
        for qualname in sorted(context):
            found = self.lookup(qualname)
            if found is not None:
                nodes_by_path[found.path].append(
                    DiagramNode(qualname, self._label(qualname, found.path), context=True)
                )
        diagram_files = [(s.path, nodes_by_path.pop(s.path, [])) for s in order]
        diagram_files += sorted(nodes_by_path.items())
        hunks_by_path: dict[str, list[Hunk]] = defaultdict(list)
        for unit in units:
            if unit.hunk is not None:
                hunks_by_path[unit.path].append(unit.hunk)
        previews = tuple(
            FilePreview(s.path, tuple(sorted(hunks_by_path[s.path], key=lambda h: h.index)))
            for s in order
        ) + tuple(FilePreview(f.path, f.hunks) for f in attached)
        order += tuple(ReadingStep(f.path, (), False) for f in attached)
        return Cohort(
            key=cohort_key(symbols, paths),
            label=GRAPH_LABEL,
            paths=tuple(paths),
            symbols=tuple(symbols),
            context=tuple(sorted(context)),
            edges=tuple(edges),
            blast_radius=self._blast_radius(symbol_set),
            reading_order=order,
            diagram=flowchart(diagram_files, ((e.source, e.target, e.kind) for e in edges)),
            previews=previews,
            unresolved_imports=unresolved_imports(self.head, code_paths, self._resolver),
        )

    def _label(self, qualname: str, path: str) -> str:
        found = self.lookup(qualname)
        if found is None:
            return qualname
        if found.kind == MODULE and found.parent is None:
            return f"module {path.rpartition('/')[2]}"
        local = qualname.partition(":")[2] if ":" in qualname else qualname
        if found.language == "python":
            module = self._module(found.path, at_head=qualname in self.head.definitions)
            local = qualname.removeprefix(module + ".")
        return f"{found.kind} {local}"

    def _member_of(self, qualname: str, members: set[str]) -> str | None:
        """`qualname` if a member, else the member class/function it is nested in."""
        if qualname in members:
            return qualname
        found = self.lookup(qualname)
        while found is not None and found.kind != MODULE and found.parent is not None:
            if found.parent in members:
                parent = self.lookup(found.parent)
                return found.parent if parent is not None and parent.kind != MODULE else None
            found = self.lookup(found.parent)
        return None

    def _edges(self, members: set[str]) -> list[Edge]:
        edges: set[Edge] = set()
        for index in (self.head, self.base):
            if index is None:
                continue
            member_paths = {d.path for q in members if (d := index.definitions.get(q)) is not None}
            for path in sorted(member_paths):
                for ref in index.references_by_path.get(path, ()):
                    if ref.target is None:
                        continue
                    source = self._member_of(ref.source, members)
                    target = self._member_of(ref.target, members)
                    if source is None or target is None or source == target:
                        continue
                    # The head says how the code will be; the base only adds edges of symbols
                    # the change removed.
                    if index is self.base and {source, target} <= self.head.definitions.keys():
                        continue
                    edges.add(Edge(source, target, ref.kind))
        edges.update(self._override_edges(members))
        return sorted(edges, key=lambda e: (e.source, e.target, e.kind))

    def _override_edges(self, members: set[str]) -> set[Edge]:
        """A member method overriding another member method: read the base one first."""
        edges = set()
        for qualname in members:
            for ref in self._dependents(qualname, seed=True):
                if ref.kind == INHERIT and ref.target == qualname and ref.source in members:
                    edges.add(Edge(ref.source, qualname, INHERIT))
        return edges

    def _blast_radius(self, symbols: set[str]) -> BlastRadius:
        seen: set[str] = set()
        frontier = [(s, True) for s in sorted(symbols)]
        while frontier:
            qualname, seed = frontier.pop()
            for ref in self._dependents(qualname, seed=seed):
                if ref.source in symbols or ref.source in seen:
                    continue
                seen.add(ref.source)
                frontier.append((ref.source, False))
        # A changed file importing another changed file is part of the change, not a dependent.
        own_paths = {d.path for q in symbols if (d := self.lookup(q)) is not None}
        found = [
            d
            for q in seen
            if (d := self.lookup(q)) is not None
            and not (d.kind == MODULE and d.parent is None and d.path in own_paths)
        ]
        return BlastRadius(
            definitions=sum(1 for d in found if not (d.kind == MODULE and d.parent is None)),
            files=len({d.path for d in found}),
        )

    def _reading_order(self, units: list[ChangeUnit], edges: list[Edge]) -> tuple[ReadingStep, ...]:
        # Symbols are listed under the diff's path (a renamed file's old symbols included).
        by_path: dict[str, list[Definition]] = defaultdict(list)
        path_of: dict[str, str] = {}
        for unit in sorted(units, key=lambda u: u.path):
            by_path.setdefault(unit.path, [])
            for qualname in sorted(unit.symbols):
                found = self.lookup(qualname)
                if found is not None and qualname not in path_of:
                    path_of[qualname] = unit.path
                    by_path[unit.path].append(found)

        def file_rank(path: str) -> tuple[bool, int, str]:
            ranks = [_KIND_RANK.get(d.kind, 2) for d in by_path[path]] or [4]
            return (is_test_path(path), min(ranks), path)

        # Users come after what they use: an edge user → used means "used first".
        file_needs: dict[str, set[str]] = {p: set() for p in by_path}
        symbol_needs: dict[str, set[str]] = {q: set() for q in path_of}
        for edge in edges:
            if edge.source in path_of and edge.target in path_of:
                symbol_needs[edge.source].add(edge.target)
                source_path, target_path = path_of[edge.source], path_of[edge.target]
                if source_path != target_path:
                    file_needs[source_path].add(target_path)
        # Tests last whatever they use: order code and tests separately.
        code = {p: n for p, n in file_needs.items() if not is_test_path(p)}
        tests = {p: n for p, n in file_needs.items() if is_test_path(p)}
        steps = []
        for path in [*_topological(code, file_rank), *_topological(tests, file_rank)]:
            definitions = {d.qualname: d for d in by_path[path]}
            needs = {q: symbol_needs[q] & definitions.keys() for q in definitions}

            def symbol_rank(q: str, table: Mapping[str, Definition] = definitions) -> tuple:
                return (_KIND_RANK.get(table[q].kind, 2), table[q].start_line, q)

            steps.append(
                ReadingStep(path, tuple(_topological(needs, symbol_rank)), is_test_path(path))
            )
        return tuple(steps)


def _is_code(index: CodeIndex, path: str) -> bool:
    """Indexed source code (a manifest is indexed for resolution, not as code)."""
    record = index.files.get(path)
    return record is not None and record.language != MANIFEST


def _topological(needs: Mapping[str, set[str]], rank: Any) -> list[str]:
    """Nodes with what they need first; ties and cycles broken by `rank` (smallest first)."""
    remaining = {node: set(deps) & needs.keys() for node, deps in needs.items()}
    out: list[str] = []
    while remaining:
        ready = [n for n, deps in remaining.items() if not deps]
        chosen = min(ready or remaining, key=rank)
        out.append(chosen)
        del remaining[chosen]
        for deps in remaining.values():
            deps.discard(chosen)
    return out
