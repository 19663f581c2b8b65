"""Cohorts: the changed code grouped by how it is connected.

changed hunks → the symbols whose spans they touch → connected components → cohorts, ranked by
blast radius. The rules, chosen so unrelated changes stay apart:

- Touching. Only added and deleted lines touch, never context lines (git's three lines of
  context would otherwise drag in the neighbouring function). An added line touches the
  innermost definition around it at head; a deleted line the innermost one at base when a base
  index is given, else the innermost definition enclosing both of its neighbours at head (so a
  deleted function touches its module or class, not the function after it). A line outside any
  definition touches the module symbol; a file changed without hunks (a pure rename, a binary
  file) touches its module symbol. All symbols touched by one hunk belong together.
- Expanding: one hop, towards dependents only. Two touched symbols join when one references the
  other directly (call, import, inheritance). A reference made inside an untouched nested
  function counts for its nearest touched enclosing class or function. A module symbol stands
  for its whole file, so a module-level change joins the code that uses anything in that file.
  Untouched direct dependents that sit in changed files are shown as `context` of a cohort but
  never join two cohorts: a file that happens to call two changed functions does not make two
  unrelated changes one. Within one file, changed symbols its own definitions connect stay
  together: members of one class, and callers of one untouched helper of the file. A file is
  split across cohorts only when its changed parts share no such link and the parts' cohorts
  hold different files; each cohort then lists it in `split_paths`, and the page says so. A
  part whose files all belong to a larger (or an identical) cohort joins it: never two
  cohorts of the same files, never a fragment of one.
- A connected component of more than `LARGE_COHORT_FILES` files (a release range) is split at
  directory boundaries, one cohort per directory, each labelled as part of a larger change.
- Tests beside their code: a component made only of test files joins the cohort of the changed
  code it references (a resolved reference to a changed symbol or file, or a call through an
  object to a method of a changed name, as tests do through fixtures); when several, the one
  with the highest blast radius; the tests linked to nothing form one group.
- Blast radius: definitions (classes, functions, methods) and files that transitively reference
  the cohort's symbols, following resolved references backwards (a module-level change counts
  users of anything in the file; an import between the cohort's own files is not a dependent).
  Calls through instances (`obj.method()`) are not resolved by the index, so they are not
  counted: the number is a lower bound.
- Keys: sha256 of the sorted qualified names and paths — no SHA, no line number — so the key
  survives a rebase, a force-push, or lines inserted above the change.
- Without a usable index, cohorts group files by directory, say so in their label, and make no
  graph claim (no blast radius, no edges). Inside an indexed repository, configuration,
  manifests and docs form one "configuration and docs" group, except a package.json/go.mod
  whose changed lines name a dependency a cohort's files import: it is read with that cohort.
  Other files the index does not cover (other languages, skipped files) are grouped by
  directory.
- Imports of the repository's own code that the index could not resolve are listed per cohort
  (`unresolved_imports`): the grouping may be missing a link there, and nothing is guessed.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reviews.domain import vendored
from reviews.index.limits import is_test_path
from reviews.index.manifest_parse import MANIFEST
from reviews.index.mermaid import DiagramNode, flowchart
from reviews.index.model import (
    CALL,
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

GRAPH_LABEL = "code graph"
NO_INDEX_LABEL = "path-based grouping (no code index)"
NOT_INDEXED_FILE_LABEL = "path-based grouping (files outside the code index)"
UNLINKED_TESTS_LABEL = "tests without a link to changed code"
CONFIG_DOCS_LABEL = "configuration and docs"
SPLIT_LABEL = "code graph, one directory of a larger connected change"
LARGE_COHORT_FILES = 12  # a connected change of more files is read directory by directory
VENDORED_LABEL = "vendored, generated and minified files (listed, not reviewed line by line)"

# Outside the code graph, these are configuration, manifests and documentation.
_CONFIG_DOC_SUFFIXES = frozenset(
    {
        ".json", ".jsonc", ".json5", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml",
        ".properties", ".gradle", ".kts", ".mod", ".sum", ".lock", ".md", ".mdx", ".rst",
        ".txt", ".adoc", ".env", ".editorconfig", ".gitignore", ".npmignore", ".gitattributes",
    }
)  # fmt: skip
_CONFIG_DOC_NAMES = frozenset(
    {"license", "licence", "makefile", "dockerfile", "readme", "changelog", "authors", "notice"}
)

# Interfaces and base types are read before what implements them (the guided reading order).
_KIND_RANK = {INTERFACE: 0, CLASS: 1, MODULE: 3}
_TYPES = (CLASS, INTERFACE)
_JSON_KEY = re.compile(r'"([^"]+)"\s*:')
_GO_REQUIRE = re.compile(r"\s*(?:require\s+)?([\w.~-]+\.[\w.~/-]+)\s+v\d")


@dataclass(frozen=True, slots=True)
class BlastRadius:
    definitions: int
    files: int


@dataclass(frozen=True, slots=True)
class ReadingStep:
    path: str
    symbols: tuple[str, ...]  # the changed symbols of this file, definitions before users
    is_test: bool


@dataclass(frozen=True, slots=True)
class FilePreview:
    path: str
    hunks: tuple[Hunk, ...]


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    kind: str


@dataclass(frozen=True, slots=True)
class Cohort:
    key: str
    label: str
    paths: tuple[str, ...]
    symbols: tuple[str, ...]
    context: tuple[str, ...]
    edges: tuple[Edge, ...]
    blast_radius: BlastRadius | None
    reading_order: tuple[ReadingStep, ...]
    diagram: str
    previews: tuple[FilePreview, ...]
    # Imports of the repository's own code in these files that the index could not resolve
    # ("path: specifier"): links the graph may be missing.
    unresolved_imports: tuple[str, ...] = ()
    # Paths other cohorts change too: their changed parts here share no link with those there.
    split_paths: tuple[str, ...] = ()

    @property
    def from_graph(self) -> bool:
        return self.label == GRAPH_LABEL

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "paths": list(self.paths),
            "symbols": list(self.symbols),
            "context": list(self.context),
            "edges": [[e.source, e.target, e.kind] for e in self.edges],
            "blast_radius": (
                None
                if self.blast_radius is None
                else {
                    "definitions": self.blast_radius.definitions,
                    "files": self.blast_radius.files,
                }
            ),
            "reading_order": [
                {"path": s.path, "symbols": list(s.symbols), "is_test": s.is_test}
                for s in self.reading_order
            ],
            "diagram": self.diagram,
            "previews": [
                {"path": p.path, "hunks": [_hunk_json(h) for h in p.hunks]} for p in self.previews
            ],
            "unresolved_imports": list(self.unresolved_imports),
            "split_paths": list(self.split_paths),
        }


def cohorts_to_json(cohorts: Iterable[Cohort]) -> list[dict[str, Any]]:
    return [c.to_json() for c in cohorts]


def cohort_key(symbols: Iterable[str], paths: Iterable[str]) -> str:
    payload = "\n".join(sorted(set(symbols))) + "\n\0\n" + "\n".join(sorted(set(paths)))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def compute_cohorts(
    files: Sequence[ChangedFile], head: CodeIndex | None, *, base: CodeIndex | None = None
) -> tuple[Cohort, ...]:
    """Cohorts of a change. `head` indexes the head commit; `base` (optional) the merge base,
    used to place deleted lines and deleted files precisely."""
    # Someone else's code and tools' output: one group, listed, never read line by line.
    kept = [f for f in files if f.not_for_models_reason not in vendored.KINDS]
    set_aside = [f for f in files if f.not_for_models_reason in vendored.KINDS]
    files = kept
    if head is None or not head.indexed:
        return _rank(_path_cohorts(files, NO_INDEX_LABEL)) + _set_aside(set_aside)
    changed_paths = {p for f in files for p in (f.old_path, f.new_path) if p is not None}
    graph = _Graph(head, base if base is not None and base.indexed else None, changed_paths)
    units: list[_Unit] = []
    outside: list[ChangedFile] = []
    for changed in files:
        file_units = graph.units_for(changed)
        if file_units:
            units.extend(file_units)
        else:
            outside.append(changed)
    code_groups: list[list[_Unit]] = []
    test_groups: list[list[_Unit]] = []
    for group in graph.components(units):
        is_tests = all(is_test_path(u.path) for u in group)
        (test_groups if is_tests else code_groups).append(group)
    code_groups = _merge_nested(code_groups)
    # A release range is often one connected change of dozens of files: read it by directory.
    parts = [(part, part is not group) for group in code_groups for part in _by_directory(group)]
    code_groups = [part for part, _ in parts]
    split = [was_split for _, was_split in parts]
    # Tests beside their code: a test file joins the cohort of the changed code it imports or
    # references (the one with the highest blast radius when several); the rest form one group.
    radius = [graph.blast_radius_of(g) for g in code_groups]
    unlinked: list[_Unit] = []
    for tests in _merge_by_path(test_groups):
        linked = [i for i, group in enumerate(code_groups) if graph.links(tests, group)]
        if linked:
            best = min(linked, key=lambda i: (-radius[i].definitions, -radius[i].files, i))
            code_groups[best] = code_groups[best] + tests
        else:
            unlinked.extend(tests)
    config = [f for f in outside if _is_config_or_doc(f.path)]
    attached = graph.attach_manifests(config, code_groups, radius)
    cohorts = [
        replace(graph.cohort(g, attached.get(i, ())), label=SPLIT_LABEL)
        if split[i]
        else graph.cohort(g, attached.get(i, ()))
        for i, g in enumerate(code_groups)
    ]
    if unlinked:
        cohorts.append(replace(graph.cohort(unlinked), label=UNLINKED_TESTS_LABEL))
    cohorts = _mark_split(cohorts)
    placed = {f.path for files in attached.values() for f in files}
    remaining = [f for f in config if f.path not in placed]
    if remaining:
        cohorts.append(_one_path_cohort(remaining, CONFIG_DOCS_LABEL))
    other = [f for f in outside if not _is_config_or_doc(f.path)]
    cohorts.extend(_path_cohorts(other, NOT_INDEXED_FILE_LABEL))
    return _rank(cohorts) + _set_aside(set_aside)


def _set_aside(files: Sequence[ChangedFile]) -> tuple[Cohort, ...]:
    """The vendored, generated and minified files as one cohort without previews, last."""
    if not files:
        return ()
    return (replace(_one_path_cohort(files, VENDORED_LABEL), previews=(), diagram=""),)


def _by_directory(group: list[_Unit]) -> list[list[_Unit]]:
    """A connected group of more than `LARGE_COHORT_FILES` files, split at directory
    boundaries (its files in one directory each form a part); a smaller one, or one in a
    single directory, whole."""
    paths = {u.path for u in group}
    if len(paths) <= LARGE_COHORT_FILES:
        return [group]
    by_directory: dict[str, list[_Unit]] = defaultdict(list)
    for unit in group:
        by_directory[posixpath.dirname(unit.path)].append(unit)
    return list(by_directory.values()) if len(by_directory) > 1 else [group]


def _merge_nested(groups: list[list[_Unit]]) -> list[list[_Unit]]:
    """A group whose files all belong to a larger group (or to one with the same files) joins
    it: a reader never meets two cohorts of the same files, and a file's other part is never a
    fragment of its own. Groups that only share some files stay apart (the page says so)."""
    kept: list[tuple[set[str], list[_Unit]]] = []
    for group in sorted(groups, key=lambda g: -len({u.path for u in g})):
        own = {u.path for u in group}
        home = next((i for i, (paths, _) in enumerate(kept) if own <= paths), None)
        if home is None:
            kept.append((own, list(group)))
        else:
            kept[home][1].extend(group)
    return [units for _, units in kept]


def _merge_by_path(groups: list[list[_Unit]]) -> list[list[_Unit]]:
    """Groups sharing a file become one: a test file is not split across cohorts."""
    merged: list[list[_Unit]] = []
    paths: list[set[str]] = []
    for group in groups:
        own = {u.path for u in group}
        overlapping = [i for i, p in enumerate(paths) if p & own]
        for i in reversed(overlapping):
            group = merged.pop(i) + group
            own |= paths.pop(i)
        merged.append(group)
        paths.append(own)
    return merged


def _mark_split(cohorts: list[Cohort]) -> list[Cohort]:
    counts: dict[str, int] = defaultdict(int)
    for cohort in cohorts:
        for path in set(cohort.paths):
            counts[path] += 1
    return [
        replace(c, split_paths=tuple(p for p in c.paths if counts[p] > 1))
        if any(counts[p] > 1 for p in c.paths)
        else c
        for c in cohorts
    ]


def _is_config_or_doc(path: str) -> bool:
    name = posixpath.basename(path).lower()
    suffix = posixpath.splitext(name)[1] or (name if name.startswith(".") else "")
    return suffix in _CONFIG_DOC_SUFFIXES or name.split(".", 1)[0] in _CONFIG_DOC_NAMES


def _rank(cohorts: Iterable[Cohort]) -> tuple[Cohort, ...]:
    def order(cohort: Cohort) -> tuple[int, int, int, str]:
        radius = cohort.blast_radius
        if radius is None:
            return (1, 0, 0, cohort.key)
        return (0, -radius.definitions, -radius.files, cohort.key)

    return tuple(sorted(cohorts, key=order))


# -- path-based fallback ---------------------------------------------------------------------


def _path_cohorts(files: Sequence[ChangedFile], label: str) -> list[Cohort]:
    by_directory: dict[str, list[ChangedFile]] = defaultdict(list)
    for changed in files:
        by_directory[posixpath.dirname(changed.path)].append(changed)
    return [_one_path_cohort(group, label) for group in by_directory.values()]


def _one_path_cohort(group: Sequence[ChangedFile], label: str) -> Cohort:
    ordered = sorted(group, key=lambda f: (is_test_path(f.path), f.path))
    paths = tuple(f.path for f in ordered)
    return Cohort(
        key=cohort_key((), paths),
        label=label,
        paths=paths,
        symbols=(),
        context=(),
        edges=(),
        blast_radius=None,
        reading_order=tuple(ReadingStep(p, (), is_test_path(p)) for p in paths),
        diagram=flowchart([(p, ()) for p in paths], ()),
        previews=tuple(FilePreview(f.path, f.hunks) for f in ordered),
    )


# -- the graph side --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Unit:
    """One hunk (or a whole file changed without hunks) and the symbols it touches."""

    path: str
    hunk: Hunk | None
    symbols: frozenset[str]
    lines: frozenset[tuple[str, int]]  # (path, line) of each changed line, head or base side


class _Graph:
    def __init__(self, head: CodeIndex, base: CodeIndex | None, changed_paths: set[str]) -> None:
        self.head = head
        self.base = base
        self.changed_paths = changed_paths
        self._resolver = ResolverCache(head)

    def lookup(self, qualname: str) -> Definition | None:
        found = self.head.definitions.get(qualname)
        if found is None and self.base is not None:
            found = self.base.definitions.get(qualname)
        return found

    # touching ---------------------------------------------------------------------------------

    def units_for(self, changed: ChangedFile) -> list[_Unit]:
        new_path = changed.new_path
        old_path = changed.old_path
        in_head = new_path is not None and _is_code(self.head, new_path)
        in_base = self.base is not None and old_path is not None and _is_code(self.base, old_path)
        if not in_head and not in_base:
            return []
        if not changed.hunks:
            module = self._module(new_path if in_head else old_path, at_head=in_head)
            return [_Unit(changed.path, None, frozenset({module}), frozenset())]
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
                units.append(_Unit(changed.path, hunk, frozenset(touched), frozenset(lines)))
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

    def _ancestors(self, qualname: str) -> list[str]:
        chain = []
        current: str | None = qualname
        while current is not None:
            chain.append(current)
            found = self.lookup(current)
            current = found.parent if found is not None else None
        return chain

    def _common_ancestor(self, qualnames: list[str]) -> str | None:
        first = self._ancestors(qualnames[0])
        others = [set(self._ancestors(q)) for q in qualnames[1:]]
        return next((q for q in first if all(q in other for other in others)), None)

    # connecting -----------------------------------------------------------------------------

    def _dependents(self, qualname: str, *, seed: bool) -> list[Reference]:
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

    def components(self, units: list[_Unit]) -> list[list[_Unit]]:
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
        for symbol in sorted(touched):
            for ref in self._dependents(symbol, seed=True):
                owner = self._owner(ref.source, touched)
                if owner is None:
                    continue
                found = self.lookup(owner)
                # A module-level statement joins only if it is itself a changed line: an edited
                # constant does not tie the file's imports to the change.
                is_module = found is not None and found.kind == MODULE and found.parent is None
                if is_module and (ref.path, ref.line) not in changed_lines:
                    continue
                union(symbol, owner)
        groups: dict[str, list[_Unit]] = defaultdict(list)
        for unit in units:
            groups[find(next(iter(unit.symbols)))].append(unit)
        return list(groups.values())

    def blast_radius_of(self, units: list[_Unit]) -> BlastRadius:
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

    def links(self, tests: list[_Unit], code: list[_Unit]) -> bool:
        """Whether the test files of `tests` import or reference the changed code of `code`
        (or are partly in it already): a resolved reference to a changed symbol, to anything
        inside one, or to a changed file; or, by name, a call through an object (a fixture)
        to a changed method or function."""
        symbols = {s for u in code for s in u.symbols}
        paths = {u.path for u in code}
        if paths & {u.path for u in tests}:
            return True  # the rest of a test file already there: the file is not split
        names = {
            d.name
            for q in symbols
            if (d := self.lookup(q)) is not None and not (d.kind == MODULE and d.parent is None)
        }
        for path in sorted({u.path for u in tests}):
            for index in (self.head, self.base):
                for ref in index.references_by_path.get(path, ()) if index is not None else ():
                    if ref.target is None:
                        qualifier, _, last = ref.name.rpartition(".")
                        if ref.kind == CALL and qualifier and last in names:
                            return True
                        continue
                    target = self.lookup(ref.target)
                    if (target is not None and target.path in paths) or any(
                        a in symbols for a in self._ancestors(ref.target)
                    ):
                        return True
        return False

    def attach_manifests(
        self,
        config: Sequence[ChangedFile],
        groups: list[list[_Unit]],
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

    def _imports_any(self, group: list[_Unit], dependencies: set[str]) -> bool:
        for path in sorted({u.path for u in group}):
            for ref in self.head.references_by_path.get(path, ()):
                spec = ref.name.partition("#")[0]
                if ref.kind == IMPORT and any(
                    spec == d or spec.startswith(d + "/") for d in dependencies
                ):
                    return True
        return False

    # describing -----------------------------------------------------------------------------

    def cohort(self, units: list[_Unit], attached: Sequence[ChangedFile] = ()) -> Cohort:
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

    def _reading_order(self, units: list[_Unit], edges: list[Edge]) -> tuple[ReadingStep, ...]:
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


def _hunk_json(hunk: Hunk) -> dict[str, Any]:
    return {
        "index": hunk.index,
        "old_start": hunk.old_start,
        "old_count": hunk.old_count,
        "new_start": hunk.new_start,
        "new_count": hunk.new_count,
        "section": hunk.section,
        "text": hunk.text,
    }
