"""The code index as data: definitions, references, per-file records, and its JSON form.

Qualified names never contain a line number or a commit, because cohort keys are derived from
them and must survive a rebase:
- Python: the dotted path of the file (`pkg/sub/mod.py` → `pkg.sub.mod`, `pkg/__init__.py` →
  `pkg`), then the nesting of classes and functions (`pkg.sub.mod.Class.method`).
- Other languages: the file path is the module (`web/src/util.ts`), definitions follow a colon
  (`web/src/util.ts:Widget.render`). Go methods are named after their receiver type.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

# 2: Python module attributes (ASSIGNED bindings); 3: Rust `mod`, `[lib]`; 4: Java packages;
# 5: what linking each file read (`reads`), so an update of a stored index links only what a
# change can affect
FORMAT_VERSION = 5

MODULE = "module"
CLASS = "class"
INTERFACE = "interface"
FUNCTION = "function"
METHOD = "method"
KINDS = (MODULE, CLASS, INTERFACE, FUNCTION, METHOD)

IMPORT = "import"
CALL = "call"
INHERIT = "inherit"
REFERENCE_KINDS = (IMPORT, CALL, INHERIT)


@dataclass(frozen=True, slots=True)
class Definition:
    qualname: str
    name: str
    kind: str  # one of KINDS
    path: str
    start_line: int  # 1-based, inclusive (decorators included)
    end_line: int
    parent: str | None  # enclosing definition; None for a file's module symbol
    language: str

    def contains(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line


@dataclass(frozen=True, slots=True)
class Reference:
    """`source` uses `name` (as written, dotted) at `path:line`; `target` once resolved."""

    source: str
    kind: str  # one of REFERENCE_KINDS
    name: str
    path: str
    line: int
    target: str | None = None


# Python: a binding whose `imported` is this is a name assigned at module level (`target` is
# the module): what `from pkg.settings import api_settings` names.
ASSIGNED = "="
# Rust: a macro (`macro_rules!`) the file defines; `#[macro_export]` makes it the crate root's.
MACRO = "!"
# Rust: `mod x;` declared in `scope` (the file, or an inline `mod` in it: `path:a.b`); `target`
# is a `#[path]` naming its file, "" for none (the file is found by the module's name). `MOD_DIR`:
# an inline `mod x { … }` whose `#[path]` (`target`) is the directory of the modules it declares.
MOD = "mod"
MOD_DIR = "mod{}"
# Java: the binding of this `local` is the file's `package` declaration (`target` its name), so
# a class reaches its package's other classes without an import whichever source root holds
# them (src/main/java and src/test/java). A keyword: no imported name can be spelt so.
JAVA_PACKAGE = "package"


@dataclass(frozen=True, slots=True)
class Binding:
    """A name made visible in `scope` by an import.

    Python: `target` is the absolute dotted name and `imported` is None (or `ASSIGNED`). Other
    languages: `target` is the module specifier as written (`./util`, `example.com/m/pkg`,
    `crate::a`) and `imported` the name taken from it, or None for a namespace/default import.
    """

    scope: str
    local: str
    target: str
    imported: str | None = None


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What parsing one file produced. References here are unresolved (target None)."""

    path: str
    language: str
    digest: str  # sha256 of the text: tells an update whether a file really changed
    module: str  # qualname of the file's module symbol
    definitions: tuple[Definition, ...]
    references: tuple[Reference, ...]
    bindings: tuple[Binding, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "language": self.language,
            "digest": self.digest,
            "module": self.module,
            "error": self.error,
            "definitions": [
                [d.qualname, d.name, d.kind, d.start_line, d.end_line, d.parent]
                for d in self.definitions
            ],
            "references": [[r.source, r.kind, r.name, r.line] for r in self.references],
            "bindings": [[b.scope, b.local, b.target, b.imported] for b in self.bindings],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileRecord:
        path, language = data["path"], data["language"]
        return cls(
            path=path,
            language=language,
            digest=data["digest"],
            module=data["module"],
            error=data.get("error"),
            definitions=tuple(
                Definition(q, n, k, path, s, e, p, language)
                for q, n, k, s, e, p in data["definitions"]
            ),
            references=tuple(Reference(s, k, n, path, ln) for s, k, n, ln in data["references"]),
            bindings=tuple(Binding(s, loc, t, i) for s, loc, t, i in data["bindings"]),
        )


@dataclass(frozen=True)
class CodeIndex:
    """An index of one commit. Treat it as immutable: `update_index` returns a new one.

    `indexed` False means the repository could not be indexed (`reason` says why); cohorts then
    fall back to path grouping and claim nothing about the graph.
    """

    files: Mapping[str, FileRecord]
    references: tuple[Reference, ...]  # every file's references, resolved where possible
    skipped: Mapping[str, str] = field(default_factory=dict)  # path → "vendored" | "huge" | …
    indexed: bool = True
    reason: str | None = None
    # file → the table keys (hashed) its references read while linking (see `linker`): what an
    # update compares with a change. None: unknown, the update links every file.
    depends: Mapping[str, frozenset[int]] | None = field(default=None, compare=False, repr=False)

    # Derived look-ups, computed once per index.
    @cached_property
    def definitions(self) -> dict[str, Definition]:
        return definition_table(self.files)

    @cached_property
    def dependents(self) -> dict[str, tuple[Reference, ...]]:
        """target qualname → the resolved references pointing at it."""
        reverse: dict[str, list[Reference]] = defaultdict(list)
        for ref in self.references:
            if ref.target is not None and ref.target != ref.source:
                reverse[ref.target].append(ref)
        return {target: tuple(refs) for target, refs in reverse.items()}

    @cached_property
    def references_by_path(self) -> dict[str, tuple[Reference, ...]]:
        grouped: dict[str, list[Reference]] = defaultdict(list)
        for ref in self.references:
            grouped[ref.path].append(ref)
        return {path: tuple(refs) for path, refs in grouped.items()}

    def definitions_in(self, path: str) -> tuple[Definition, ...]:
        record = self.files.get(path)
        return record.definitions if record is not None else ()

    def module_of(self, path: str) -> Definition | None:
        record = self.files.get(path)
        return self.definitions.get(record.module) if record is not None else None

    def innermost(self, path: str, line: int) -> Definition | None:
        """The narrowest definition (not the module) whose span holds `line`, if any."""
        table = self._innermost.get(path)
        if table is None:
            table = self._innermost[path] = innermost_by_line(self.definitions_in(path))
        return table[line] if 0 <= line < len(table) else None

    @cached_property
    def _innermost(self) -> dict[str, list[Definition | None]]:
        # A change asks for every changed line of a file: one table per file, not one scan of
        # the file's definitions per line.
        return {}

    @property
    def failed(self) -> dict[str, str]:
        return {p: r.error for p, r in self.files.items() if r.error is not None}

    def stats(self) -> dict[str, int]:
        resolved = sum(1 for r in self.references if r.target is not None)
        return {
            "files": len(self.files),
            "definitions": len(self.definitions),
            "references": len(self.references),
            "resolved_references": resolved,
            "failed_files": len(self.failed),
            "skipped_files": len(self.skipped),
        }

    def to_json(self) -> dict[str, Any]:
        """A JSON-compatible dict, deterministic for equal indexes (sorted by path)."""
        targets: dict[str, list[str | None]] = defaultdict(list)
        for ref in self.references:
            targets[ref.path].append(ref.target)
        return {
            "format": FORMAT_VERSION,
            "indexed": self.indexed,
            "reason": self.reason,
            "skipped": dict(sorted(self.skipped.items())),
            "files": [
                {
                    **self.files[path].to_json(),
                    "targets": targets.get(path, []),
                    **_reads(self.depends, path),
                }
                for path in sorted(self.files)
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CodeIndex:
        if data.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported code index format: {data.get('format')!r}")
        files: dict[str, FileRecord] = {}
        references: list[Reference] = []
        depends: dict[str, frozenset[int]] | None = {}
        for entry in data["files"]:
            record = FileRecord.from_json(entry)
            files[record.path] = record
            if depends is not None and "reads" in entry:
                depends[record.path] = frozenset(entry["reads"])
            else:
                depends = None
            stored = entry.get("targets", [])
            if len(stored) != len(record.references):
                raise ValueError(f"code index for {record.path}: targets do not match references")
            references.extend(
                with_target(r, t) for r, t in zip(record.references, stored, strict=True)
            )
        return cls(
            files=files,
            references=tuple(references),
            skipped=dict(data.get("skipped", {})),
            indexed=bool(data["indexed"]),
            reason=data.get("reason"),
            depends=depends,
        )


def _reads(depends: Mapping[str, frozenset[int]] | None, path: str) -> dict[str, list[int]]:
    found = depends.get(path) if depends is not None else None
    return {} if found is None else {"reads": sorted(found)}


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def definition_table(files: Mapping[str, FileRecord]) -> dict[str, Definition]:
    """qualname → definition over all files."""
    table: dict[str, Definition] = {}
    for path in sorted(files):
        for definition in files[path].definitions:
            # Two files can claim one name (pkg.py next to pkg/__init__.py): first path wins.
            table.setdefault(definition.qualname, definition)
    return table


def with_target(ref: Reference, target: str | None) -> Reference:
    return Reference(ref.source, ref.kind, ref.name, ref.path, ref.line, target)


def innermost_by_line(definitions: Sequence[Definition]) -> list[Definition | None]:
    """For each line number, the narrowest definition (not the module) holding it; of two as
    narrow, the one listed first. Widest first, so the narrowest is written last."""
    spans = [
        (index, d)
        for index, d in enumerate(definitions)
        if not (d.kind == MODULE and d.parent is None) and 0 <= d.start_line <= d.end_line
    ]
    table: list[Definition | None] = [None] * (max((d.end_line for _, d in spans), default=0) + 1)
    for _, d in sorted(spans, key=lambda item: (item[1].start_line - item[1].end_line, -item[0])):
        table[d.start_line : d.end_line + 1] = [d] * (d.end_line - d.start_line + 1)
    return table
