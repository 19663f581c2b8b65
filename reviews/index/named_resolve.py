"""Best-effort, name-based resolution for the tree-sitter languages (JS/TS, Go, Java, Rust).

There is no type checker behind this, so the rules are deliberately conservative — a missing
edge costs a reader some context, a false edge merges unrelated cohorts:
- `self.m` (also `this.m`, a Go receiver, Rust `self`) → method `m` of the enclosing type, then of
  its resolved base types; `super.m` → the bases only;
- `X.m` where `X` is an import binding → `m` in the imported module (JS/TS relative imports, Go
  packages by directory, Rust `crate::` paths by file, Java classes by file), or member `m` of the
  imported class; where `X` is a type declared in the same file or package → its member `m`;
- a bare `f` → an imported name, then a definition of the same file, then (Go, Java) of the same
  directory/package, then (JS/TS, Rust) the only top-level definition of that name in the language;
- a call on any other receiver (`obj.m()`, `a.b.c()`) is left unresolved: without types, the
  receiver's class is a guess. Packages outside the repository are never resolved.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Mapping

from reviews.index.limits import LANGUAGE_FAMILY
from reviews.index.model import (
    CLASS,
    IMPORT,
    INTERFACE,
    METHOD,
    MODULE,
    Binding,
    Definition,
    FileRecord,
)

_JS_SUFFIXES = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_SAME_PACKAGE = frozenset({"go", "java"})
_UNIQUE_FALLBACK = frozenset({"js", "rust"})
_TYPES = (CLASS, INTERFACE)


def _local(qualname: str) -> str:
    return qualname.partition(":")[2]


class NamedResolver:
    def __init__(self, files: Mapping[str, FileRecord], definitions: Mapping[str, Definition]):
        self._files = files
        self._defs = definitions
        self._top: dict[tuple[str, str], str] = {}  # (path, name) → top-level definition
        self._by_dir: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        self._by_family: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._by_local: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        self._bindings: dict[str, dict[str, Binding]] = {}
        self._inherits: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self._dirs: dict[str, list[str]] = defaultdict(list)  # Go: directory → files
        self._by_basename: dict[str, list[str]] = defaultdict(list)
        for path in sorted(files):
            record = files[path]
            family = LANGUAGE_FAMILY.get(record.language)
            if family is None or family == "python":
                continue
            directory = posixpath.dirname(path)
            self._by_basename[posixpath.basename(path)].append(path)
            if family == "go":
                self._dirs[directory].append(path)
            self._bindings[path] = {b.local: b for b in record.bindings}
            for definition in record.definitions:
                if definition.parent == record.module and definition.kind != METHOD:
                    self._top.setdefault((path, definition.name), definition.qualname)
                    self._by_dir[(family, directory, definition.name)].append(definition.qualname)
                    self._by_family[(family, definition.name)].append(definition.qualname)
                if definition.kind != MODULE or definition.parent is not None:
                    local = _local(definition.qualname)
                    self._by_local[(family, directory, local)].append(definition.qualname)
            for ref in record.references:
                if ref.kind == "inherit":
                    self._inherits[ref.source].append((path, ref.name))
        self._bases: dict[str, tuple[str, ...]] = {}

    # -- entry point -------------------------------------------------------------------------

    def resolve(self, record: FileRecord, kind: str, source: str, name: str) -> str | None:
        family = LANGUAGE_FAMILY[record.language]
        if kind == IMPORT:
            return self._import(record, family, name)
        qualifier, _, last = name.rpartition(".")
        if not qualifier:
            return self._bare(record, family, source, last)
        if qualifier == "self":
            owner = self._enclosing_type(source)
            return self._member(owner, last, family, record.path) if owner else None
        if qualifier == "super":
            owner = self._enclosing_type(source)
            return self._member(owner, last, family, record.path, skip_self=True) if owner else None
        return self._qualified(record, family, qualifier, last)

    # -- imports -----------------------------------------------------------------------------

    def _import(self, record: FileRecord, family: str, name: str) -> str | None:
        spec, _, imported = name.partition("#")
        if family in ("java", "rust"):
            return self._path_like(record, family, spec)
        files = self._module_files(record, family, spec)
        if not files:
            return None
        if imported and imported != "default":
            for path in files:
                found = self._top.get((path, imported))
                if found is not None:
                    return found
        return self._files[files[0]].module

    def _module_files(self, record: FileRecord, family: str, spec: str) -> list[str]:
        if family == "js":
            if not spec.startswith("."):
                return []  # a package from node_modules
            base = posixpath.normpath(posixpath.join(posixpath.dirname(record.path), spec))
            candidates = [base, *(base + s for s in _JS_SUFFIXES)]
            candidates += [f"{base}/index{s}" for s in _JS_SUFFIXES]
            return [c for c in candidates if c in self._files][:1]
        if family == "go":
            best = ""
            for directory in self._dirs:
                matches = directory and (spec == directory or spec.endswith("/" + directory))
                if matches and len(directory) > len(best):
                    best = directory
            return list(self._dirs.get(best, [])) if best else []
        return []

    def _path_like(self, record: FileRecord, family: str, spec: str) -> str | None:
        """Java `com.x.Util[.member]` and Rust `crate::a::b[::item]`: the longest prefix that
        names a file, then items inside it."""
        separator = "." if family == "java" else "::"
        parts = [p for p in spec.split(separator) if p not in ("crate", "self", "super", "*")]
        for cut in range(len(parts), 0, -1):
            stem = "/".join(parts[:cut])
            java = family == "java"
            suffixes = (f"{stem}.java",) if java else (f"{stem}.rs", f"{stem}/mod.rs")
            path = self._file_ending_with(suffixes, family)
            if path is None:
                continue
            rest = parts[cut - 1 :] if family == "java" else parts[cut:]
            current = self._files[path].module
            for part in rest:
                nxt = f"{path}:{part}" if current == path else f"{current}.{part}"
                if nxt not in self._defs:
                    return current if current != path or not rest else None
                current = nxt
            return current
        return None

    def _file_ending_with(self, suffixes: tuple[str, ...], family: str) -> str | None:
        matches = {
            path
            for suffix in suffixes
            for path in self._by_basename.get(posixpath.basename(suffix), ())
            if LANGUAGE_FAMILY.get(self._files[path].language) == family
            and (path == suffix or path.endswith("/" + suffix))
        }
        return next(iter(matches)) if len(matches) == 1 else None

    # -- names -------------------------------------------------------------------------------

    def _bare(self, record: FileRecord, family: str, source: str, name: str) -> str | None:
        if family == "java":
            owner = self._enclosing_type(source)
            if owner is not None:
                found = self._member(owner, name, family, record.path)
                if found is not None:
                    return found
        binding = self._bindings.get(record.path, {}).get(name)
        if binding is not None:
            return self._through_binding(record, family, binding)
        found = self._top.get((record.path, name))
        if found is not None:
            return found
        if family in _SAME_PACKAGE:
            same_dir = self._by_dir.get((family, posixpath.dirname(record.path), name), [])
            if len(same_dir) == 1:
                return same_dir[0]
        if family in _UNIQUE_FALLBACK:
            everywhere = self._by_family.get((family, name), [])
            if len(everywhere) == 1:
                return everywhere[0]
        return None

    def _through_binding(self, record: FileRecord, family: str, binding: Binding) -> str | None:
        if family in ("java", "rust"):
            return self._path_like(record, family, binding.target)
        name = f"{binding.target}#{binding.imported}" if binding.imported else binding.target
        return self._import(record, family, name)

    def _qualified(self, record: FileRecord, family: str, qualifier: str, name: str) -> str | None:
        head, _, _more = qualifier.partition(".")
        binding = self._bindings.get(record.path, {}).get(head)
        if binding is not None and head == qualifier:
            target = self._through_binding(record, family, binding)
            if target is None:
                return None
            definition = self._defs.get(target)
            if definition is not None and definition.kind == MODULE:
                if family == "go":  # a package: any of its files
                    files = self._module_files(record, family, binding.target)
                    return next(
                        (self._top[(p, name)] for p in files if (p, name) in self._top), None
                    )
                return self._top.get((definition.path, name))
            return self._member(target, name, family, record.path)
        # A type declared in this file or package: `Util.helper()`, `Type::new()`.
        owner = self._top.get((record.path, qualifier.rpartition(".")[2]))
        if owner is None and family in _SAME_PACKAGE:
            same_dir = self._by_dir.get((family, posixpath.dirname(record.path), qualifier), [])
            owner = same_dir[0] if len(same_dir) == 1 else None
        if owner is not None and self._defs[owner].kind in _TYPES:
            return self._member(owner, name, family, record.path)
        if family == "rust":
            # `util::helper()` after `mod util;`: the path names a file.
            return self._path_like(record, family, f"{qualifier.replace('.', '::')}::{name}")
        return None

    # -- types and members -------------------------------------------------------------------

    def _enclosing_type(self, source: str) -> str | None:
        """The type `self` refers to in `source`, as a qualname (it may live in another file of
        the package for Go, or be declared only through methods)."""
        current: str | None = source
        while current is not None:
            definition = self._defs.get(current)
            if definition is None:
                return None
            if definition.kind in _TYPES:
                return current
            if definition.kind == METHOD:
                return current.rpartition(".")[0]
            current = definition.parent
        return None

    def _member(
        self, owner: str, name: str, family: str, path: str, *, skip_self: bool = False
    ) -> str | None:
        for cls in self._mro(owner, family)[1 if skip_self else 0 :]:
            candidate = f"{cls}.{name}"
            if candidate in self._defs:
                return candidate
            if family in ("go", "rust"):
                # Methods of one type can be spread over files (Go package, Rust impl blocks).
                directory = posixpath.dirname(cls.partition(":")[0])
                spread = self._by_local.get((family, directory, f"{_local(cls)}.{name}"), [])
                if len(spread) == 1:
                    return spread[0]
        return None

    def _mro(self, cls: str, family: str) -> list[str]:
        order: list[str] = []
        stack = [cls]
        while stack:
            current = stack.pop()
            if current in order:
                continue
            order.append(current)
            stack.extend(reversed(self._bases_of(current, family)))
        return order

    def _bases_of(self, cls: str, family: str) -> tuple[str, ...]:
        if cls in self._bases:
            return self._bases[cls]
        self._bases[cls] = ()
        found: list[str] = []
        for path, name in self._inherits.get(cls, ()):
            record = self._files[path]
            target = self.resolve(record, "inherit", cls, name)
            if target is not None and self._defs[target].kind in _TYPES and target != cls:
                found.append(target)
        self._bases[cls] = tuple(found)
        return self._bases[cls]
