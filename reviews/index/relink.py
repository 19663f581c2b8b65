"""Which files an incremental update links again, and the update's references.

While linking, each file's references note every table key they read (`CodeIndex.depends`),
found or not: a definition that appears where a reference looked in vain is seen too. A file is
linked again when it changed, or when one of its keys is one a changed file altered: a
definition added, removed or changed in kind or parent, an import binding, a star import or
re-export, a base class, a `src/`-layout import name, a top-level name of a Go or Java package,
a file at a path a JS/TS import tried. A file is linked again as a whole.

Where the tables are not compared key by key, more is linked again (correctness first):
- an `__init__.py` added or removed changes which directories are packages, hence the import
  names and script neighbours of many files: every Python file;
- a Rust file added or removed, or its `mod` declarations or `#[macro_export]`s changed: the
  module tree is rebuilt, so every Rust file;
- a Go file added or removed: without a go.mod, import paths are matched against every package
  directory, so every Go file;
- a manifest (package.json, tsconfig, go.mod, Cargo.toml) added, removed or saying something
  else of names, exports, paths, module or crate: every non-Python file;
- an index without `depends` (stored before format 5): every file.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Mapping

from reviews.domain.indexed_files import LANGUAGE_FAMILY
from reviews.index.link_reads import ReadKey, key_hash
from reviews.index.linker import Linked, link_files
from reviews.index.manifest_parse import MANIFEST
from reviews.index.model import (
    ASSIGNED,
    INHERIT,
    MACRO,
    MOD,
    MOD_DIR,
    Binding,
    CodeIndex,
    FileRecord,
    Reference,
    definition_table,
)
from reviews.index.named_resolve import named_facts
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
    families: set[str] = set()  # linked again as a whole
    keys: set[int] = set()  # hashed, as `depends` holds them
    for path in changed:
        before, after = old.files.get(path), records.get(path)
        families |= _whole_families(path, before, after)
        old_facts, new_facts = _facts(before, python), _facts(after, python)
        keys.update(
            key_hash(k) for k in old_facts.keys() | new_facts.keys() if old_facts[k] != new_facts[k]
        )
    out = {p for p in changed if p in records}
    for path, record in records.items():
        depends = old.depends.get(path)
        family = LANGUAGE_FAMILY.get(record.language, record.language)
        if family in families or depends is None or not depends.isdisjoint(keys):
            out.add(path)
    return out


def _whole_families(path: str, before: FileRecord | None, after: FileRecord | None) -> set[str]:
    """The language families whose every file a change of `path` links again."""
    language = (after or before).language  # type: ignore[union-attr]
    family = LANGUAGE_FAMILY.get(language, language)
    added_or_removed = (before is None) != (after is None)
    if language == MANIFEST:
        if before is not None and after is not None and before.bindings == after.bindings:
            return set()  # a version bump: resolution reads only a manifest's bindings
        return {MANIFEST, "js", "go", "java", "rust"}
    if family == "python" and posixpath.basename(path) == "__init__.py" and added_or_removed:
        return {"python"}
    if family == "go" and added_or_removed:
        return {"go"}
    if family == "rust" and _rust_tree(before) != _rust_tree(after):
        return {"rust"}
    return set()


def _rust_tree(record: FileRecord | None) -> tuple[Binding, ...] | None:
    """What a Rust file says of the module tree (and of macros at the crate's root)."""
    if record is None:
        return None
    return tuple(b for b in record.bindings if b.imported in (MOD, MOD_DIR, MACRO))


def _facts(record: FileRecord | None, python: PythonResolver) -> Facts:
    """What `record` puts in the tables resolution reads, by key: two versions of a file whose
    facts agree on a key leave the answers read through that key as they were."""
    facts: Facts = defaultdict(list)
    if record is None:
        return facts
    facts[record.path].append(record.digest)  # anything read off the record itself
    for d in record.definitions:  # lines are left out: no resolution reads them
        facts[d.qualname].append((d.kind, d.parent, d.name, d.path))
    if record.language == MANIFEST:
        return facts
    if record.language != "python":
        for key, found in named_facts(record).items():
            facts[key].extend(found)
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
