"""Python names → definitions, across the whole repository.

Resolution follows Python's own rules as far as static text allows:
- a name used in a function is looked up in that function, then each enclosing function, then
  the module (class bodies are skipped, as Python skips them), through nested definitions and
  import bindings; `from x import *` is searched last;
- `self.m` / `cls.m` look `m` up in the enclosing class and then its bases (resolved base
  classes, depth first); `super().m` starts at the bases;
- an absolute dotted name is split at its longest known module prefix and walked through
  classes, submodules and re-exports (`pkg/__init__.py` doing `from .impl import f`); a name
  the module assigns at its top level (`API_SETTINGS = …`), or imports from outside the
  repository and hands on (`compat.urlparse`), resolves to the module itself.

Module names: every file is known by its dotted path from the repository root. A file inside a
package whose top-level package is not at the root (`src/pkg/mod.py`) is also known by its
import name (`pkg.mod`). A script outside any package can import its siblings by bare name.

Not resolved (documented limits): attributes of instances (`obj.method()` where `obj` is a local
variable or parameter), names assigned at run time, `getattr`, monkey-patching, and anything
outside the repository (the standard library, installed packages).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Mapping

from reviews.index.link_reads import ReadKey, TrackedDict, TrackedSet
from reviews.index.model import (
    ASSIGNED,
    CLASS,
    IMPORT,
    INHERIT,
    INTERFACE,
    MODULE,
    Definition,
    FileRecord,
)

_MAX_DEPTH = 12


def _parent(path: str) -> str:
    """The directory of a repository path, "." at the root (as `PurePosixPath.parent` says)."""
    return posixpath.dirname(path) or "."


class PythonResolver:
    """`log`: when given, every table key read while resolving is appended to it (see
    `link_reads`), so the linker knows what each file's references depended on."""

    def __init__(
        self,
        files: Mapping[str, FileRecord],
        definitions: Mapping[str, Definition],
        log: list[ReadKey] | None = None,
    ):
        self._defs = definitions
        self._bindings: dict[tuple[str, str], str] = {}
        self._stars: dict[str, list[str]] = defaultdict(list)
        self._inherits: dict[str, list[str]] = defaultdict(list)
        python = {p: r for p, r in files.items() if r.language == "python"}
        self._attributes: set[tuple[str, str]] = set()
        for record in python.values():
            for binding in record.bindings:
                if binding.imported == ASSIGNED:
                    self._attributes.add((binding.scope, binding.local))
                elif binding.local == "*":
                    self._stars[binding.scope].append(binding.target)
                else:
                    self._bindings.setdefault((binding.scope, binding.local), binding.target)
            for ref in record.references:
                if ref.kind == INHERIT:
                    self._inherits[ref.source].append(ref.name)
        self._package_dirs = {_parent(p) for p in python if posixpath.basename(p) == "__init__.py"}
        self._roots: dict[str, str] = {}  # package directory → where its top package lies
        self._import_names: dict[str, list[str]] = defaultdict(list)
        for path, record in sorted(python.items()):
            name = self._import_name(path, record.module)
            if name is not None and name != record.module:
                self._import_names[name].append(record.module)
        self._bases: dict[str, tuple[str, ...]] = {}
        self._siblings: dict[str, str | None] = {}
        self.log = log
        self._base_reads: dict[str, list[ReadKey]] = {}
        if log is not None:
            self._defs = TrackedDict(definitions, log)
            self._bindings = TrackedDict(self._bindings, log)
            self._stars = TrackedDict(self._stars, log)
            self._inherits = TrackedDict(self._inherits, log)
            self._attributes = TrackedSet(self._attributes, log)
            self._import_names = TrackedDict(self._import_names, log)

    def import_name(self, path: str, module: str) -> str | None:
        """The name `path` is imported by when it is not its dotted path (`src/pkg/m.py`)."""
        name = self._import_name(path, module)
        return name if name != module else None

    def _import_name(self, path: str, module: str) -> str | None:
        directory = _parent(path)
        if directory not in self._package_dirs:
            return None
        root = self._roots.get(directory)
        if root is None:  # once per directory, not once per file
            top = directory
            while top != "." and _parent(top) in self._package_dirs:
                top = _parent(top)
            root = self._roots[directory] = _parent(top)
        if root == ".":
            return module
        prefix = root.replace("/", ".") + "."
        return module.removeprefix(prefix)

    def _sibling_prefix(self, path: str) -> str | None:
        if path not in self._siblings:
            directory = _parent(path)
            outside = directory == "." or directory in self._package_dirs
            self._siblings[path] = None if outside else directory.replace("/", ".")
        return self._siblings[path]

    # -- entry point -------------------------------------------------------------------------

    def resolve(self, record: FileRecord, kind: str, source: str, name: str) -> str | None:
        if kind == IMPORT:
            target = self.absolute(name)
        else:
            start = source
            if kind == INHERIT:
                # Base classes are evaluated where the class statement is, not in its body.
                parent = self._defs[source].parent if source in self._defs else None
                start = parent or source
            target = self.in_scope(start, name, sibling=self._sibling_prefix(record.path))
        if target is None and kind == IMPORT:
            sibling = self._sibling_prefix(record.path)
            if sibling is not None:
                target = self.absolute(f"{sibling}.{name}")
        return target

    # -- names in scope ----------------------------------------------------------------------

    def in_scope(self, source: str, dotted: str, *, sibling: str | None = None) -> str | None:
        first, _, rest = dotted.partition(".")
        if first in ("self", "cls") and rest:
            owner = self._enclosing_class(source)
            return self._member(owner, rest, skip_self=False) if owner else None
        if first == "super" and rest:
            owner = self._enclosing_class(source)
            return self._member(owner, rest, skip_self=True) if owner else None
        chain = self._scope_chain(source)
        base: str | None = None
        bound_by_import = False
        for scope in chain:
            candidate = f"{scope}.{first}"
            defined = self._defs.get(candidate)
            if defined is not None and defined.parent == scope:
                base = candidate
                break
            bound = self._bindings.get((scope, first))
            if bound is not None:
                base, bound_by_import = bound, True
                break
        if base is None:
            for scope in chain:
                for star in self._stars.get(scope, ()):
                    base = self.absolute(f"{star}.{first}")
                    if base is not None:
                        break
                if base is not None:
                    break
        if base is None:
            return None
        full = f"{base}.{rest}" if rest else base
        found = self.absolute(full)
        if found is None and bound_by_import and sibling is not None:
            found = self.absolute(f"{sibling}.{full}")  # a script importing its neighbour
        return found

    def _scope_chain(self, source: str) -> list[str]:
        chain: list[str] = []
        current: str | None = source
        first = True
        while current is not None:
            definition = self._defs.get(current)
            if definition is None:
                break
            if first or definition.kind not in (CLASS, INTERFACE):
                chain.append(current)
            first = False
            current = definition.parent
        return chain

    def _enclosing_class(self, source: str) -> str | None:
        definition = self._defs.get(source)
        # Start above `source`: in a method, `self` is the class around the method.
        current = definition.parent if definition is not None else None
        while current is not None:
            found = self._defs.get(current)
            if found is None:
                return None
            if found.kind in (CLASS, INTERFACE):
                return current
            current = found.parent
        return None

    def _member(self, owner: str, rest: str, *, skip_self: bool) -> str | None:
        name, _, more = rest.partition(".")
        if more:
            return None  # self.attr.method(): the attribute's type is unknown
        classes = self.mro(owner)
        for cls in classes[1:] if skip_self else classes:
            candidate = f"{cls}.{name}"
            if candidate in self._defs:
                return candidate
        return None

    def mro(self, cls: str) -> tuple[str, ...]:
        """The class and its resolved bases, depth first without repeats (a simplified MRO)."""
        order: list[str] = []
        stack = [cls]
        while stack:
            current = stack.pop()
            if current in order:
                continue
            order.append(current)
            stack.extend(reversed(self._bases_of(current)))
        return tuple(order)

    def _bases_of(self, cls: str) -> tuple[str, ...]:
        log = self.log
        if cls in self._bases:
            if log is not None:  # what computing them read, for each reference relying on them
                log.extend(self._base_reads.get(cls, ()))
            return self._bases[cls]
        mark = len(log) if log is not None else 0
        self._bases[cls] = ()  # guards against class A(B) / class B(A) loops
        definition = self._defs.get(cls)
        start = definition.parent if definition is not None and definition.parent else cls
        found = []
        for name in self._inherits.get(cls, ()):
            target = self.in_scope(start, name)
            if target is not None and self._defs[target].kind in (CLASS, INTERFACE):
                found.append(target)
        self._bases[cls] = tuple(found)
        if log is not None:
            self._base_reads[cls] = log[mark:]
        return self._bases[cls]

    # -- absolute dotted names ---------------------------------------------------------------

    def _module(self, dotted: str) -> str | None:
        if dotted in self._defs:
            return dotted
        candidates = self._import_names.get(dotted)
        if candidates and len(candidates) == 1:
            return candidates[0]
        return None

    def absolute(self, dotted: str, depth: int = 0) -> str | None:
        if depth > _MAX_DEPTH or not dotted:
            return None
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            head = self._module(".".join(parts[:cut]))
            if head is not None:
                return self._walk(head, parts[cut:], depth)
        return None

    def _walk(self, current: str, rest: list[str], depth: int) -> str | None:
        for position, part in enumerate(rest):
            candidate = f"{current}.{part}"
            if candidate in self._defs:
                current = candidate
                continue
            kind = self._defs[current].kind
            if kind == MODULE:
                remaining = ".".join(rest[position:])
                tail = ".".join(rest[position + 1 :])
                exported = self._bindings.get((current, part))
                if exported is not None:
                    found = self.absolute(f"{exported}.{tail}" if tail else exported, depth + 1)
                    if found is None and not tail:
                        # The module imports the name from outside the repository (the standard
                        # library, a dependency) and hands it on: it is defined there, for us.
                        return current
                    return found
                for star in self._stars.get(current, ()):
                    found = self.absolute(f"{star}.{remaining}", depth + 1)
                    if found is not None:
                        return found
                if not tail and (current, part) in self._attributes:
                    # A value the module assigns (a constant, a settings object): it lives in
                    # the module's file. An attribute of that value is not followed.
                    return current
                return None
            if kind in (CLASS, INTERFACE):
                member = self._member(current, part, skip_self=True)
                if member is None:
                    return None
                current = member
                continue
            return None  # an attribute of a function: not a definition
        return current
