"""Which files an incremental update links again, and the update's references.

A Python file is linked again when it changed, or when one of the table keys its references
read while linking (`CodeIndex.depends`) is one a changed file altered: a definition added,
removed or changed in kind or parent, an import binding, a star import, a base class, a
`src/`-layout import name. Failed look-ups are among the keys read, so a definition that appears
where a reference looked in vain is seen too. A file is linked again as a whole.

Where no such set is computed, more is linked again (correctness first):
- an `__init__.py` added or removed changes which directories are packages, hence the import
  names and script neighbours of many files: every Python file;
- a changed JavaScript/TypeScript, Go, Java or Rust file: every file of its language family
  (module trees, packages and re-exports are resolved from tables not tracked per key);
- a changed manifest (package.json, tsconfig, go.mod, Cargo.toml): every non-Python file;
- an index without `depends` (read from JSON): every file.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Mapping

from reviews.domain.indexed_files import LANGUAGE_FAMILY
from reviews.index.link_reads import ReadKey
from reviews.index.linker import Linked, link_files
from reviews.index.manifest_parse import MANIFEST
from reviews.index.model import (
    ASSIGNED,
    INHERIT,
    CodeIndex,
    FileRecord,
    Reference,
    definition_table,
)
from reviews.index.python_resolve import PythonResolver

Facts = dict[ReadKey, list[object]]


def relink(old: CodeIndex, records: Mapping[str, FileRecord], changed: set[str]) -> Linked:
    """The links of the index of `records`, which differs from `old` in the files at `changed`
    (added, modified or deleted)."""
    definitions = definition_table(records)
    python = PythonResolver(records, definitions, [])
    paths = _to_relink(old, records, changed, python)
    linked, depends = link_files(records, definitions, sorted(paths), python)
    previous = _references_by_path(old)
    references: list[Reference] = []
    for path in sorted(records):
        found = linked.get(path)
        references.extend(found if found is not None else previous[path])
    kept = {p: d for p, d in (old.depends or {}).items() if p in records and p not in linked}
    return Linked(tuple(references), kept | depends, definitions)


def _to_relink(
    old: CodeIndex, records: Mapping[str, FileRecord], changed: set[str], python: PythonResolver
) -> set[str]:
    if old.depends is None:
        return set(records)
    families: set[str] = set()
    every_python = False
    keys: set[ReadKey] = set()
    for path in changed:
        before, after = old.files.get(path), records.get(path)
        language = (after or before).language  # type: ignore[union-attr]
        if language == MANIFEST:
            families.update({"js", "go", "java", "rust"})
        elif language != "python":
            families.add(LANGUAGE_FAMILY.get(language, language))
        elif posixpath.basename(path) == "__init__.py" and (before is None) != (after is None):
            every_python = True
        old_facts, new_facts = _facts(before, python), _facts(after, python)
        keys.update(
            k for k in old_facts.keys() | new_facts.keys() if old_facts.get(k) != new_facts.get(k)
        )
    if any(isinstance(k, str) and (":" in k or k in records or k in old.files) for k in keys):
        # A Python name spelt like another language's qualname (`main/go.py` is `main.go`).
        families.update({"js", "go", "java", "rust"})
    out = {p for p in changed if p in records}
    for path, record in records.items():
        if record.language == "python":
            depends = old.depends.get(path)
            if every_python or depends is None or not depends.isdisjoint(keys):
                out.add(path)
        elif record.language == MANIFEST or LANGUAGE_FAMILY.get(record.language) in families:
            out.add(path)
    return out


def _facts(record: FileRecord | None, python: PythonResolver) -> Facts:
    """What `record` puts in the tables resolution reads, by key: two versions of a file whose
    facts agree on a key leave that key's answers as they were."""
    facts: Facts = defaultdict(list)
    if record is None:
        return facts
    for d in record.definitions:  # lines are left out: no resolution reads them
        facts[d.qualname].append((d.kind, d.parent, d.name, d.path))
    if record.language != "python":
        return facts
    for b in record.bindings:
        if b.local == "*" and b.imported != ASSIGNED:
            facts[b.scope].append(("*", b.target))
        else:
            facts[(b.scope, b.local)].append((b.target, b.imported))
    for ref in record.references:
        if ref.kind == INHERIT:
            facts[ref.source].append((INHERIT, ref.name))
    name = python.import_name(record.path, record.module)
    if name is not None:
        facts[name].append(("import name", record.module))
    return facts


def _references_by_path(index: CodeIndex) -> dict[str, tuple[Reference, ...]]:
    """The index's references of each file: they are in path order, as many as the record's."""
    out: dict[str, tuple[Reference, ...]] = {}
    start = 0
    for path in sorted(index.files):
        end = start + len(index.files[path].references)
        out[path] = index.references[start:end]
        start = end
    return out
