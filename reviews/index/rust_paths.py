"""Rust paths as the compiler reads them: which crate and module each Rust file is, and what
`crate::a::b::Item`, `self::x`, `super::y` or `my_crate::z` names (a file, an inline `mod`, an
item, or one a module re-exports). Used by `named_resolve` for Rust imports.

A file's place comes from where it lies (`src/a/b.rs` is module `a::b`), then from the `mod`
declarations of the files placed so, the way rustc finds a module's file:
- `#[path = "p"] mod x;` is the file `p` relative to the declaring file's directory; inside an
  inline `mod m { … }` relative to m's directory (`m/` next to a `mod.rs`/`lib.rs`/`main.rs`,
  `a/m/` in a file `a.rs`, or the directory m's own `#[path]` names);
- `mod x;` is `x.rs` or `x/mod.rs` in the declaring module's directory, and a file reached
  through a `#[path]` declares its modules next to itself, as a `mod.rs` does;
- a `#[cfg_attr(…, path = "p")]` names one more file the module can be; modules of one name in
  one place (cfg variants: two inline `mod x { … }`, a file and an inline one, two `#[path]`s)
  are each looked in until one holds the name.
A file a test crate includes by `#[path]` (`#[path = "../src/lexical/mod.rs"] mod lexical;`)
is that module in the test's crate as well as its own place in the library.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from reviews.index.model import MACRO, MOD, MOD_DIR, MODULE, Binding, Definition, FileRecord

if TYPE_CHECKING:
    import tree_sitter as ts

Place = tuple[str, tuple[str, ...]]  # (the crate's directory or test file, the module path)
# (a file, the directory its `mod x;` are looked in, the name of a non-mod-rs file (`a` for
# `a.rs`), whose modules are in `a/`)
_Owned = tuple[str, str, str | None]

_PATH = re.compile(r'path\s*=\s*"([^"]*)"')
_CFG_PATH = re.compile(r'cfg_attr\s*\(.*\bpath\s*=\s*"([^"]*)"', re.DOTALL)
_TARGET_DIRS = ("tests", "examples", "benches", "fuzz_targets")
_BEFORE_ITEM = ("attribute_item", "line_comment", "block_comment")


def mod_paths(node: ts.Node, *, inline: bool) -> list[str]:
    """What the attributes before a `mod_item` say of its file: each `#[path = "…"]` and
    `#[cfg_attr(…, path = "…")]`, then "" (the file the name gives) unless a plain `#[path]`
    replaces it; for an inline `mod`, only the directories its `#[path]`s name."""
    plain: list[str] = []
    conditional: list[str] = []
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type in _BEFORE_ITEM:
        for attribute in sibling.named_children:
            if attribute.type != "attribute":
                continue
            text = _node_text(attribute)
            if (found := _PATH.fullmatch(text)) is not None:
                plain.insert(0, found.group(1))
            elif (found := _CFG_PATH.match(text)) is not None:
                conditional.insert(0, found.group(1))
        sibling = sibling.prev_named_sibling
    named = [] if plain or inline else [""]
    return list(dict.fromkeys([*plain, *conditional, *named]))


class RustPaths:
    def __init__(
        self,
        files: Mapping[str, FileRecord],
        definitions: Mapping[str, Definition],
        bindings: Mapping[str, dict[str, Binding]],
        cargo: Mapping[str, str],
        lib_roots: Mapping[str, str],
    ) -> None:
        self._files = files
        self._defs = definitions
        self._bindings = bindings
        self._cargo = cargo  # a Cargo.toml's directory → its crate's name
        self._crates = frozenset(cargo.values())
        self._lib_roots = lib_roots  # … → its `[lib] path` (from the repository's root)
        # Each file's place (where its own paths start), and the files of each place.
        self._place_of: dict[str, Place] = {}
        self._files_at: dict[Place, list[str]] = defaultdict(list)
        # Under tests/ (examples/ …) but no target of its own: a module some test declares.
        self._loose: set[str] = set()
        for path in sorted(files):
            place = self._rust_place(path) if files[path].language == "rust" else None
            if place is not None:
                self._place_of[path] = place
                self._files_at[place].append(path)
        self._declare()
        # `#[macro_export]` puts a macro at the crate's root whichever file defines it.
        self._rust_macros: dict[tuple[str, str], str] = {}
        for path, (crate, _) in sorted(self._place_of.items()):
            for b in files[path].bindings:
                if b.imported == MACRO:
                    self._rust_macros.setdefault((crate, b.local), files[path].module)

    def track(
        self,
        files: Mapping[str, FileRecord],
        definitions: Mapping[str, Definition],
        bindings: Mapping[str, dict[str, Binding]],
    ) -> None:
        """Read through these tables from now on (`NamedResolver.track`: they note their keys)."""
        self._files, self._defs, self._bindings = files, definitions, bindings

    def _rust_place(self, path: str) -> Place | None:
        """(the crate's directory, the module path) of a Rust file by where it lies: `src/lib.rs`
        and `src/main.rs` (or Cargo.toml's `[lib] path`) are the crate root, `src/a/b.rs` and
        `src/a/b/mod.rs` module `a::b`; a file under `tests/`, `examples/`, `benches/` or
        `fuzz_targets/` is a crate root of its own (keyed by its path), which reaches the library
        through the crate's name."""
        crate = max(
            (d for d in self._cargo if not d or path.startswith(d + "/")), key=len, default=None
        )
        if crate is None:
            return None
        if self._lib_roots.get(crate) == path:
            return crate, ()
        rel = path[len(crate) + 1 :] if crate else path
        top, _, rest = rel.partition("/")
        if top != "src" or not rest:
            if top not in _TARGET_DIRS:
                return None
            if "/" in rest and not rest.endswith("/main.rs"):  # `tests/t/main.rs` is a target
                self._loose.add(path)
            return path, ()
        parts = rest.removesuffix(".rs").split("/")
        if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
            parts = parts[:-1]
        return crate, tuple(parts)

    # -- `mod` declarations ----------------------------------------------------------------------

    def _declare(self) -> None:
        """Places from the `mod` declarations of every placed file, and of the files they place
        in turn. A file takes the first place a declaration gives it for its own paths when it
        is declared in its own crate (`#[path = "core.rs"] mod imp;` makes `core.rs` module
        `imp`) or is a test's module; a file has one declared place per crate (no cycles)."""
        declared: dict[str, list[Binding]] = defaultdict(list)
        directories: dict[tuple[str, str], str] = {}
        for path, record in self._files.items():
            for b in record.bindings:
                if b.imported == MOD:
                    declared[path].append(b)
                elif b.imported == MOD_DIR:
                    directories.setdefault((b.scope, b.local), b.target)
        queue = [
            (place, self._owned(path, place))
            for path, place in sorted(self._place_of.items(), reverse=True)
            if path in declared
        ]
        placed: set[tuple[str, str]] = set()  # (file, crate)
        taken: set[str] = set()
        while queue:
            (crate, module), (path, directory, relative) = queue.pop()
            for b in declared.get(path, ()):
                chain = _chain(b.scope)
                found = self._declared_file((path, directory, relative), chain, b, directories)
                if found is None or (found[0], crate) in placed:
                    continue
                placed.add((found[0], crate))
                place = (crate, (*module, *chain, b.local))
                if found[0] not in self._files_at[place]:
                    self._files_at[place].append(found[0])
                own = self._place_of.get(found[0])
                if found[0] not in taken and (
                    own is None or own[0] == crate or found[0] in self._loose
                ):
                    self._place_of[found[0]] = place
                    taken.add(found[0])
                queue.append((place, found))

    @staticmethod
    def _owned(path: str, place: Place) -> _Owned:
        """Where a file placed by where it lies declares its modules: next to itself for a crate
        root or a `mod.rs`, in `a/` for `a.rs`."""
        directory, name = posixpath.split(path)
        if not place[1] or name == "mod.rs":
            return path, directory, None
        return path, directory, name.removesuffix(".rs")

    def _declared_file(
        self,
        owner: _Owned,
        chain: tuple[str, ...],
        declaration: Binding,
        directories: Mapping[tuple[str, str], str],
    ) -> _Owned | None:
        """The file of `mod x;` declared in `owner` (inside its inline modules `chain`), and
        where that file declares its own modules; None when no such file is indexed."""
        path, directory, relative = owner
        for depth, name in enumerate(chain):
            scope = f"{path}:{'.'.join(chain[:depth])}" if depth else path
            named = directories.get((scope, name))
            if named is not None:
                directory, relative = posixpath.join(directory, named), None
            else:
                directory = posixpath.join(directory, relative or "", name)
                relative = None
        if declaration.target:
            found = posixpath.normpath(posixpath.join(directory, declaration.target))
            return (found, posixpath.dirname(found), None) if self._is_rust(found) else None
        base = posixpath.join(directory, relative) if relative else directory
        name = declaration.local
        for found, owned in (
            (posixpath.join(base, f"{name}.rs"), (base, name)),
            (posixpath.join(base, name, "mod.rs"), (posixpath.join(base, name), None)),
        ):
            if self._is_rust(found):
                return found, *owned
        return None

    def _is_rust(self, path: str) -> bool:
        record = self._files.get(path)
        return record is not None and record.language == "rust"

    # -- paths -----------------------------------------------------------------------------------

    def resolve(
        self, importer: str, spec: str, depth: int, source: str | None = None
    ) -> str | None:
        """`crate::a::Item`, `self::x`, `super::y`, `my_crate::z` (from an integration test) as
        the compiler reads them: module by module through the crate's files, then the item in
        its module's file (its own, an inline `mod`, or one the file `pub use`s). `self` and
        `super` start from the inline `mod` that holds `source`, if any."""
        place = self._place_of.get(importer)
        if place is None or depth > 8:
            return None
        crate, here = place
        if source is not None:
            here = (*here, *self._inline_modules(importer, source))
        segments = [s for s in spec.split("::") if s]
        if not segments:
            return None
        first = segments[0]
        current: tuple[str, ...]
        if first == "crate":
            current, rest = (), segments[1:]
        elif first == "self":
            current, rest = here, segments[1:]
        elif first == "super":
            current, rest = here, segments
            while rest and rest[0] == "super":
                current, rest = current[:-1], rest[1:]
        elif first in self._crates:
            named = [d for d, name in self._cargo.items() if name == first]
            # Two packages of one name (a test harness re-packaging the library): the one
            # around the importer, else the only one.
            around = [d for d in named if not d or importer.startswith(d + "/")]
            if not around and len(named) != 1:
                return None
            crate, current, rest = max(around or named, key=len), (), segments[1:]
        else:
            return None
        return self._lookup(crate, (*current, *rest), depth)

    def _lookup(self, crate: str, full: tuple[str, ...], depth: int) -> str | None:
        """The item `full` names in `crate`: in the files of its longest module prefix that has
        any (cfg variants each in turn), else in an inline `mod` of a shorter prefix's file."""
        longest = True
        for cut in range(len(full), -1, -1):
            paths = self._files_at.get((crate, full[:cut]), ())
            for path in paths:
                inline = cut < len(full) and self._is_module(f"{path}:{full[cut]}")
                if longest or inline:
                    found = self._rust_items(path, list(full[cut:]), depth)
                    if found is not None:
                        return found
            longest = longest and not paths
        if len(full) == 1:
            return self._rust_macros.get((crate, full[0]))
        return None

    def _is_module(self, qualname: str) -> bool:
        definition = self._defs.get(qualname)
        return definition is not None and definition.kind == MODULE

    def _inline_modules(self, path: str, source: str) -> tuple[str, ...]:
        """The inline `mod`s around `source` (`path:a.b.f` in `mod a { mod b { fn f … } }`)."""
        local = source.partition(":")[2]
        parts = local.split(".") if local else []
        chain: list[str] = []
        for part in parts:
            if not self._is_module(f"{path}:{'.'.join([*chain, part])}"):
                break
            chain.append(part)
        return tuple(chain)

    def _rust_items(self, path: str, rest: list[str], depth: int) -> str | None:
        current = self._files[path].module
        for position, part in enumerate(rest):
            if part in ("*", "self"):
                break
            nxt = f"{path}:{part}" if current == path else f"{current}.{part}"
            if nxt in self._defs:
                current = nxt
                continue
            if current != path:
                return current  # a member of an item (`Error::new`): the item
            binding = self._bindings.get(path, {}).get(part)
            if binding is not None:
                tail = "::".join(rest[position + 1 :])
                target = f"{binding.target}::{tail}" if tail else binding.target
                found = self.resolve(path, target, depth + 1)
                # Imported from outside the crate (`std::error::Error as StdError`) and handed
                # on: defined here, for its users.
                return found if found is not None else current
            for star in (b.target for b in self._files[path].bindings if b.local == "*"):
                found = self.resolve(path, f"{star}::{part}", depth + 1)
                if found is not None:
                    return found
            return None
        return current


def rust_callee(node: ts.Node | None) -> str:
    """A call's callee as the index writes names: `f`, `a.b.f`, `self.m`, `x.m`; "" if none."""
    if node is None:
        return ""
    if node.type == "identifier":
        return _node_text(node)
    if node.type == "scoped_identifier":
        return _node_text(node).replace("::", ".")
    if node.type == "field_expression":
        value = node.child_by_field_name("value")
        name = _node_text(node.child_by_field_name("field"))
        if value is not None and value.type == "self":
            return f"self.{name}"
        if value is not None and value.type == "identifier":
            return f"{_node_text(value)}.{name}"
    if node.type == "generic_function":
        return rust_callee(node.child_by_field_name("function"))
    return ""


def _node_text(node: ts.Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def _chain(scope: str) -> tuple[str, ...]:
    """The inline modules of a declaration's scope (`path:a.b` → `a`, `b`)."""
    local = scope.partition(":")[2]
    return tuple(local.split(".")) if local else ()
