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
  other directly (call, import, inheritance), both in code or both in tests (tests join code
  below, so a test using two changed parts does not make them one). A reference made inside an
  untouched nested function counts for its nearest touched enclosing class or function. A module
  symbol stands for its whole file, so a module-level change joins the code that uses anything
  in that file. Untouched direct dependents that sit in changed files are shown as `context` of
  a cohort but never join two cohorts: a file that happens to call two changed functions does
  not make two unrelated changes one. Within one file, changed symbols its own definitions
  connect stay together: members of one class, and callers of one untouched helper of the file.
  A file is split across cohorts only when its changed parts share no such link and the parts'
  cohorts hold different files; each cohort then lists it in `split_paths`, and the page says
  so. A part whose files all belong to a larger (or an identical) cohort joins it: never two
  cohorts of the same files, never a fragment of one.
- A connected component of more than `LARGE_COHORT_FILES` files (a release range) is split at
  directory boundaries, one cohort per directory, each labelled as part of a larger change.
- Tests beside their code: each changed test file joins the cohort of the changed code it
  references (a resolved reference to a touched definition, or to a class whose implementation
  changed; or a call through an object to a method of a changed name, as tests do through
  fixtures), or reaches through at most two unchanged files, or unchanged parts of changed
  files, by resolved references (a test of a public facade whose implementation changed; see
  cohort_tests). When several: the nearest (touched code before the rest of a changed file
  and before a changed interface that only declares a shape, a link by name alone the
  farthest), then the one its changed lines use most (weighed
  by how few tests use the same file), then the one it uses most, then the highest blast
  radius. A test file linked to no code itself (a changed fixture) goes where the tests using
  it, or used by it, are linked best. The tests linked to nothing form one group: counted and
  shown, never guessed.
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

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from reviews.domain import vendored
from reviews.domain.indexed_files import is_test_path
from reviews.index.cohort_graph import ChangeUnit, CohortGraph
from reviews.index.cohort_tests import attach_tests
from reviews.index.cohort_types import (
    Cohort,
    FilePreview,
    ReadingStep,
    cohort_key,
)
from reviews.index.mermaid import flowchart
from reviews.index.model import (
    CodeIndex,
)
from reviews.sources.diffs import ChangedFile

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
    graph = CohortGraph(head, base if base is not None and base.indexed else None, changed_paths)
    units: list[ChangeUnit] = []
    outside: list[ChangedFile] = []
    for changed in files:
        file_units = graph.units_for(changed)
        if file_units:
            units.extend(file_units)
        else:
            outside.append(changed)
    code_groups: list[list[ChangeUnit]] = []
    test_groups: list[list[ChangeUnit]] = []
    for group in graph.components(units):
        is_tests = all(is_test_path(u.path) for u in group)
        (test_groups if is_tests else code_groups).append(group)
    code_groups = _merge_nested(code_groups)
    # A release range is often one connected change of dozens of files: read it by directory.
    parts = [(part, part is not group) for group in code_groups for part in _by_directory(group)]
    code_groups = [part for part, _ in parts]
    split = [was_split for _, was_split in parts]
    # Tests beside their code, each file where its links lead; the rest form one group.
    radius = [graph.blast_radius_of(g) for g in code_groups]
    unlinked = attach_tests(graph, code_groups, _merge_by_path(test_groups), radius)
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


def _by_directory(group: list[ChangeUnit]) -> list[list[ChangeUnit]]:
    """A connected group of more than `LARGE_COHORT_FILES` files, split at directory
    boundaries (its files in one directory each form a part); a smaller one, or one in a
    single directory, whole."""
    paths = {u.path for u in group}
    if len(paths) <= LARGE_COHORT_FILES:
        return [group]
    by_directory: dict[str, list[ChangeUnit]] = defaultdict(list)
    for unit in group:
        by_directory[posixpath.dirname(unit.path)].append(unit)
    return list(by_directory.values()) if len(by_directory) > 1 else [group]


def _merge_nested(groups: list[list[ChangeUnit]]) -> list[list[ChangeUnit]]:
    """A group whose files all belong to a larger group (or to one with the same files) joins
    it: a reader never meets two cohorts of the same files, and a file's other part is never a
    fragment of its own. Groups that only share some files stay apart (the page says so)."""
    kept: list[tuple[set[str], list[ChangeUnit]]] = []
    for group in sorted(groups, key=lambda g: -len({u.path for u in g})):
        own = {u.path for u in group}
        home = next((i for i, (paths, _) in enumerate(kept) if own <= paths), None)
        if home is None:
            kept.append((own, list(group)))
        else:
            kept[home][1].extend(group)
    return [units for _, units in kept]


def _merge_by_path(groups: list[list[ChangeUnit]]) -> list[list[ChangeUnit]]:
    """Groups sharing a file become one: a test file is not split across cohorts."""
    merged: list[list[ChangeUnit]] = []
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
