"""Rust paths as the compiler reads them: which crate and module each Rust file is, and what
`crate::a::b::Item`, `self::x`, `super::y` or `my_crate::z` names (a file, an inline `mod`, an
item, or one a module re-exports). Used by `named_resolve` for Rust imports."""

from __future__ import annotations

from collections.abc import Mapping

from reviews.index.model import MACRO, Binding, Definition, FileRecord

Place = tuple[str, tuple[str, ...]]  # (the crate's directory or test file, the module path)


class RustPaths:
    def __init__(
        self,
        files: Mapping[str, FileRecord],
        definitions: Mapping[str, Definition],
        bindings: Mapping[str, dict[str, Binding]],
        cargo: Mapping[str, str],
    ) -> None:
        self._files = files
        self._defs = definitions
        self._bindings = bindings
        self._cargo = cargo  # a Cargo.toml's directory → its crate's name
        self._crates = frozenset(cargo.values())
        # Each file's module path in its crate, and the file of each module.
        self._rust_of: dict[str, Place] = {}
        self._rust_files: dict[Place, str] = {}
        # `#[macro_export]` puts a macro at the crate's root whichever file defines it.
        self._rust_macros: dict[tuple[str, str], str] = {}
        for path, record in files.items():
            if record.language == "rust":
                place = self._rust_place(path)
                if place is not None:
                    self._rust_of[path] = place
                    self._rust_files.setdefault(place, path)
                    for b in record.bindings:
                        if b.imported == MACRO:
                            self._rust_macros.setdefault((place[0], b.local), record.module)

    def _rust_place(self, path: str) -> Place | None:
        """(the crate's directory, the module path) of a Rust file: `src/lib.rs` and
        `src/main.rs` are the crate root, `src/a/b.rs` and `src/a/b/mod.rs` module `a::b`; a
        file under `tests/`, `examples/`, `benches/` or `fuzz_targets/` is a crate root of its
        own (keyed by its path), which reaches the library through the crate's name. Modules
        placed by `#[path = …]` are not followed."""
        crate = max(
            (d for d in self._cargo if not d or path.startswith(d + "/")), key=len, default=None
        )
        if crate is None:
            return None
        rel = path[len(crate) + 1 :] if crate else path
        top, _, rest = rel.partition("/")
        if top != "src" or not rest:
            return (path, ()) if top in ("tests", "examples", "benches", "fuzz_targets") else None
        parts = rest.removesuffix(".rs").split("/")
        if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
            parts = parts[:-1]
        return crate, tuple(parts)

    def resolve(self, importer: str, spec: str, depth: int) -> str | None:
        """`crate::a::Item`, `self::x`, `super::y`, `my_crate::z` (from an integration test) as
        the compiler reads them: module by module through the crate's files, then the item in
        its module's file (its own, an inline `mod`, or one the file `pub use`s)."""
        place = self._rust_of.get(importer)
        if place is None or depth > 8:
            return None
        crate, here = place
        segments = [s for s in spec.split("::") if s]
        if not segments:
            return None
        first = segments[0]
        current: tuple[str, ...]
        if first == "crate":
            current, rest = (), segments[1:]
            if crate == importer:  # a test's own crate root is the test file itself
                return self._rust_items(importer, rest, depth)
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
        while rest and (crate, (*current, rest[0])) in self._rust_files:
            current, rest = (*current, rest[0]), rest[1:]
        path = self._rust_files.get((crate, current))
        found = self._rust_items(path, rest, depth) if path is not None else None
        if found is None and not current and len(rest) == 1:
            return self._rust_macros.get((crate, rest[0]))
        return found

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
