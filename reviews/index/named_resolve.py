"""Best-effort, name-based resolution for the tree-sitter languages (JS/TS, Go, Java, Rust).

There is no type checker behind this, so the rules are deliberately conservative — a missing
edge costs a reader some context, a false edge merges unrelated cohorts:
- `self.m` (also `this.m`, a Go receiver, Rust `self`) → method `m` of the enclosing type, then of
  its resolved base types; `super.m` → the bases only;
- `X.m` where `X` is an import binding → `m` in the imported module (JS/TS imports, Go packages
  by directory, Rust `crate::` paths by file, Java classes by file), or member `m` of the
  imported class; where `X` is a type declared in the same file or package → its member `m`;
- JS/TS module specifiers the way TypeScript's bundler/node16 resolution reads them: relative
  ones, with `.js`/`.mjs`/`.cjs`/`.jsx` naming the `.ts`/`.mts`/`.cts`/`.tsx` source, without an
  extension, or naming a directory's `index`; `paths` and `baseUrl` of the nearest
  `tsconfig.json`/`jsconfig.json`; the repository's own package name through its `package.json`
  (`exports`, `main`/`module`/`types`/`source`, a build directory mapped back to `rootDir`);
  names re-exported by `export * from`/`export {a} from` are followed to their definition;
- Go import paths under the `module` of a `go.mod` → the package directory (without any go.mod,
  the longest directory the path ends with);
- a bare `f` → an imported name, then a definition of the same file, then of the same Go
  directory or declared Java package (src/test/java reaches src/main/java), then (JS/TS, Rust)
  the only top-level definition of that name in the language;
- a call on any other receiver (`obj.m()`, `a.b.c()`) is left unresolved: without types, the
  receiver's class is a guess. Packages outside the repository are never resolved.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Mapping

from reviews.domain.indexed_files import LANGUAGE_FAMILY
from reviews.index.link_reads import ReadKey, TrackedDict
from reviews.index.manifest_parse import MANIFEST
from reviews.index.model import (
    CLASS,
    IMPORT,
    INTERFACE,
    JAVA_PACKAGE,
    METHOD,
    MOD,
    MOD_DIR,
    MODULE,
    Binding,
    Definition,
    FileRecord,
)
from reviews.index.rust_paths import RustPaths

_JS_SUFFIXES = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d.ts")
# An ESM specifier names the file the compiler will emit; the repository holds its source.
_JS_SOURCE_FOR = {
    ".js": (".ts", ".tsx"),
    ".jsx": (".tsx",),
    ".mjs": (".mts",),
    ".cjs": (".cts",),
}
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
        self._by_dir: dict[tuple[str, str, str], list[str]] = defaultdict(list)  # by package
        self._package_of: dict[str, str] = {}  # path → its package (see `_package`)
        self._by_family: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._by_local: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        self._bindings: dict[str, dict[str, Binding]] = {}
        self._inherits: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self._dirs: dict[str, list[str]] = defaultdict(list)  # Go: directory → files
        self._by_basename: dict[str, list[str]] = defaultdict(list)
        self._stars: dict[str, list[str]] = defaultdict(list)  # JS: `export * from` specs
        self._java_dirs: set[str] = set()
        # Manifests: directory → facts.
        self._packages: list[tuple[str, str, list[tuple[str, str]]]] = []
        self._tsconfigs: dict[str, dict[str, list[tuple[str, str | None]]]] = {}
        self._go_modules: list[tuple[str, str]] = []
        self._crates: set[str] = set()
        self._cargo: dict[str, str] = {}  # Rust: a Cargo.toml's directory → its crate's name
        self._lib_roots: dict[str, str] = {}  # … → its `[lib] path`, from the repository's root
        for path in sorted(files):
            record = files[path]
            if record.language == MANIFEST:
                self._read_manifest(record)
                continue
            family = LANGUAGE_FAMILY.get(record.language)
            if family is None or family == "python":
                continue
            directory = posixpath.dirname(path)
            package = self._package_of[path] = _package(record, family)
            self._by_basename[posixpath.basename(path)].append(path)
            if family == "go":
                self._dirs[directory].append(path)
            self._bindings[path] = {
                b.local: b
                for b in record.bindings
                if b.local != "*" and b.imported not in (MOD, MOD_DIR)
            }
            if family == "js":
                self._stars[path] = [b.target for b in record.bindings if b.local == "*"]
            if family == "java":
                self._java_dirs.add(directory)
            for definition in record.definitions:
                if definition.parent == record.module and definition.kind != METHOD:
                    self._top.setdefault((path, definition.name), definition.qualname)
                    self._by_dir[(family, package, definition.name)].append(definition.qualname)
                    self._by_family[(family, definition.name)].append(definition.qualname)
                if definition.kind != MODULE or definition.parent is not None:
                    local = _local(definition.qualname)
                    self._by_local[(family, directory, local)].append(definition.qualname)
            for ref in record.references:
                if ref.kind == "inherit":
                    self._inherits[ref.source].append((path, ref.name))
        self._bases: dict[str, tuple[str, ...]] = {}
        self._go_modules.sort(key=lambda item: -len(item[1]))
        self._rust = RustPaths(files, definitions, self._bindings, self._cargo, self._lib_roots)
        self.log: list[ReadKey] | None = None
        self._base_reads: dict[str, list[ReadKey]] = {}

    def track(self, log: list[ReadKey]) -> None:
        """From now on, append every table key read to `log` (see `link_reads`). Not noted: the
        manifests' facts and the Rust module tree, which an update compares as a whole."""
        self.log = log
        self._files = TrackedDict(self._files, log)
        self._defs = TrackedDict(self._defs, log)
        self._top = TrackedDict(self._top, log)
        self._by_dir = TrackedDict(self._by_dir, log)
        self._package_of = TrackedDict(self._package_of, log)
        self._by_family = TrackedDict(self._by_family, log)
        self._by_local = TrackedDict(self._by_local, log)
        self._bindings = TrackedDict(self._bindings, log)
        self._inherits = TrackedDict(self._inherits, log)
        self._dirs = TrackedDict(self._dirs, log)
        self._by_basename = TrackedDict(self._by_basename, log)
        self._stars = TrackedDict(self._stars, log)
        self._rust.track(self._files, self._defs, self._bindings)

    def _read_manifest(self, record: FileRecord) -> None:
        directory = posixpath.dirname(record.path)
        name = posixpath.basename(record.path)
        if name == "Cargo.toml":
            crates = [b.target for b in record.bindings if b.local == "crate"]
            self._crates.update(crates)
            if crates:
                self._cargo[directory] = crates[0]
            for b in record.bindings:
                if b.local == "lib":
                    self._lib_roots[directory] = posixpath.normpath(
                        posixpath.join(directory, b.target)
                    )
        elif name == "go.mod":
            self._go_modules += [
                (directory, b.target) for b in record.bindings if b.local == "module"
            ]
        elif name == "package.json":
            names = [b.target for b in record.bindings if b.local == "name"]
            exports = [(b.target, b.imported or "") for b in record.bindings if b.local == "export"]
            if names:
                self._packages.append((directory, names[0], exports))
        else:
            facts: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
            for b in record.bindings:
                facts[b.local].append((b.target, b.imported))
            # tsconfig.json wins over jsconfig.json in one directory.
            if name == "tsconfig.json" or directory not in self._tsconfigs:
                self._tsconfigs[directory] = dict(facts)

    # -- entry point -------------------------------------------------------------------------

    def resolve(self, record: FileRecord, kind: str, source: str, name: str) -> str | None:
        family = LANGUAGE_FAMILY[record.language]
        if kind == IMPORT:
            return self._import(record, family, name, source)
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

    def _import(
        self, record: FileRecord, family: str, name: str, source: str | None = None
    ) -> str | None:
        spec, _, imported = name.partition("#")
        if family in ("java", "rust"):
            return self._path_like(record, family, spec, source)
        files = self._module_files(record, family, spec)
        if not files:
            return None
        if imported and imported != "default":
            for path in files:
                found = self._exported(path, imported, family, set())
                if found is not None:
                    return found
        return self._files[files[0]].module

    def _exported(self, path: str, name: str, family: str, seen: set[str]) -> str | None:
        """The definition `name` exported by the file at `path`: its own, or (JS/TS) one it
        re-exports (`export {name} from`, an imported name exported again, `export * from`)."""
        found = self._top.get((path, name))
        if found is not None or family != "js" or path in seen:
            return found
        seen.add(path)
        record = self._files[path]
        binding = self._bindings.get(path, {}).get(name)
        if binding is not None:
            target = self._module_files(record, family, binding.target)
            if not target:
                return None
            if binding.imported is None or binding.imported == "default":
                return self._files[target[0]].module
            return self._exported(target[0], binding.imported, family, seen)
        for spec in self._stars.get(path, ()):
            target = self._module_files(record, family, spec)
            found = self._exported(target[0], name, family, seen) if target else None
            if found is not None:
                return found
        return None

    def _module_files(self, record: FileRecord, family: str, spec: str) -> list[str]:
        if family == "js":
            if spec.startswith("."):
                base = posixpath.normpath(posixpath.join(posixpath.dirname(record.path), spec))
                found = self._js_file(base)
                return [found] if found else []
            for base in self._js_aliases(record.path, spec):
                found = self._js_file(base)
                if found:
                    return [found]
            return []  # a package from node_modules, or an alias that names no file
        if family == "go":
            directory = self._go_directory(spec)
            return list(self._dirs.get(directory, [])) if directory is not None else []
        return []

    def _go_directory(self, spec: str) -> str | None:
        for root, module in self._go_modules:
            if spec == module or spec.startswith(module + "/"):
                directory = posixpath.normpath(posixpath.join(root, spec[len(module) + 1 :]))
                return "" if directory == "." else directory  # the module's root package
        if self._go_modules:
            return None  # a module of its own, outside the repository
        best = ""
        for directory in self._dirs:
            matches = directory and (spec == directory or spec.endswith("/" + directory))
            if matches and len(directory) > len(best):
                best = directory
        return best or None

    # -- JS/TS module specifiers ---------------------------------------------------------------

    def _js_file(self, base: str, *, mapped: bool = False) -> str | None:
        stem, ext = posixpath.splitext(base)
        if base.endswith(".d.ts"):
            stem, ext = base[: -len(".d.ts")], ".js"
        candidates = [base, *(stem + s for s in _JS_SOURCE_FOR.get(ext, ()))]
        candidates += [base + s for s in _JS_SUFFIXES]
        candidates += [f"{base}/index{s}" for s in _JS_SUFFIXES]
        for candidate in candidates:
            record = self._files.get(candidate)
            if record is not None and LANGUAGE_FAMILY.get(record.language) == "js":
                return candidate
        if mapped:
            return None
        # A build output (`dist/index.js`) → the source it is compiled from, where a tsconfig
        # says both directories.
        for directory, facts in self._tsconfigs.items():
            out, root = facts.get("outDir"), facts.get("rootDir")
            if not out or not root:
                continue
            out_dir = posixpath.normpath(posixpath.join(directory, out[0][0]))
            if base.startswith(out_dir + "/"):
                root_dir = posixpath.normpath(posixpath.join(directory, root[0][0]))
                source = posixpath.normpath(f"{root_dir}/{base[len(out_dir) + 1 :]}")
                found = self._js_file(source, mapped=True)
                if found:
                    return found
        return None

    def _js_aliases(self, importer: str, spec: str, *, declared: bool = False) -> list[str]:
        """Paths a non-relative specifier can name inside the repository: tsconfig `paths`, then
        `baseUrl`, then the repository's own package name. Empty for a dependency's package.
        `declared`: only what a manifest names explicitly (`baseUrl` lets any specifier try the
        repository first, so it says nothing about whose code the specifier means)."""
        bases: list[str] = []
        config_dir = self._nearest(importer, self._tsconfigs)
        if config_dir is not None:
            facts = self._tsconfigs[config_dir]
            base_url = facts.get("baseUrl")
            root = posixpath.join(config_dir, base_url[0][0]) if base_url else config_dir
            for pattern, target in facts.get("path", ()):
                star = _match(pattern, spec)
                if star is not None and target:
                    bases.append(
                        posixpath.normpath(posixpath.join(root, target.replace("*", star)))
                    )
            if base_url and not declared:
                bases.append(posixpath.normpath(posixpath.join(root, spec)))
        for directory, name, exports in self._packages:
            if spec != name and not spec.startswith(name + "/"):
                continue
            subpath = "." + spec[len(name) :]
            for key, target in exports:
                star = _match(key, subpath)
                if star is not None:
                    bases.append(
                        posixpath.normpath(posixpath.join(directory, target.replace("*", star)))
                    )
            if subpath != ".":
                bases.append(posixpath.normpath(posixpath.join(directory, subpath)))
        return bases

    @staticmethod
    def _nearest(path: str, by_directory: Mapping[str, object]) -> str | None:
        directory = posixpath.dirname(path)
        while True:
            if directory in by_directory:
                return directory
            if not directory:
                return None
            directory = posixpath.dirname(directory)

    # -- own code ------------------------------------------------------------------------------

    def is_own_import(self, record: FileRecord, spec: str) -> bool:
        """Whether an import names the repository's own code (so failing to resolve it is a
        hole in the graph, not a dependency): relative and aliased JS/TS specifiers, Go paths
        under the repository's module, Java packages whose directory holds Java files, Rust
        `crate::`/`self::`/`super::` paths."""
        family = LANGUAGE_FAMILY.get(record.language)
        spec = spec.partition("#")[0]
        if family == "js":
            return (
                spec.startswith(".")
                or bool(self._js_aliases(record.path, spec, declared=True))
                or bool(self._module_files(record, family, spec))
            )
        if family == "go":
            if self._go_modules:
                return any(spec == m or spec.startswith(m + "/") for _, m in self._go_modules)
            return self._go_directory(spec) is not None
        if family == "java":
            whole = spec.replace(".", "/")
            if any(d == whole or d.endswith("/" + whole) for d in self._java_dirs):
                return False  # `import com.x.*`: a whole package, its names resolved one by one
            package = spec.rpartition(".")[0].replace(".", "/")
            return any(d == package or d.endswith("/" + package) for d in self._java_dirs)
        if family == "rust":
            return spec.split("::", 1)[0] in ("crate", "self", "super", *self._crates)
        return False

    def _path_like(
        self, record: FileRecord, family: str, spec: str, source: str | None = None
    ) -> str | None:
        """Java `com.x.Util[.member]` and Rust `crate::a::b[::item]`: the longest prefix that
        names a file, then items inside it."""
        if family == "rust":
            found = self._rust.resolve(record.path, spec, 0, source)
            if found is not None:
                return found
        separator = "." if family == "java" else "::"
        parts = [p for p in spec.split(separator) if p not in ("crate", "self", "super", "*")]
        if family == "rust" and parts and parts[0] in self._crates and len(parts) > 1:
            parts = parts[1:]  # `my_lib::a::b` from an integration test: the crate's own path
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
            same_dir = self._by_dir.get((family, self._package_of[record.path], name), [])
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
            same_dir = self._by_dir.get((family, self._package_of[record.path], qualifier), [])
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
        log = self.log
        if cls in self._bases:
            if log is not None:  # what computing them read, for each reference relying on them
                log.extend(self._base_reads.get(cls, ()))
            return self._bases[cls]
        mark = len(log) if log is not None else 0
        self._bases[cls] = ()
        found: list[str] = []
        for path, name in self._inherits.get(cls, ()):
            record = self._files[path]
            target = self.resolve(record, "inherit", cls, name)
            if target is not None and self._defs[target].kind in _TYPES and target != cls:
                found.append(target)
        self._bases[cls] = tuple(found)
        if log is not None:
            self._base_reads[cls] = log[mark:]
        return self._bases[cls]


def named_facts(record: FileRecord) -> dict[ReadKey, list[object]]:
    """What a JS/TS, Go, Java or Rust file puts in `NamedResolver`'s tables, by key (keep in
    step with `__init__`): two versions of a file whose facts agree on a key leave the answers
    read through that key as they were."""
    facts: dict[ReadKey, list[object]] = defaultdict(list)
    path, family = record.path, LANGUAGE_FAMILY.get(record.language, record.language)
    directory, package = posixpath.dirname(path), _package(record, family)
    facts[posixpath.basename(path)].append(("file", path))
    if family == "go":
        facts[directory].append(("go file", path))
    for d in record.definitions:
        if d.parent == record.module and d.kind != METHOD:
            facts[(path, d.name)].append(d.qualname)
            facts[(family, package, d.name)].append(d.qualname)
            facts[(family, d.name)].append(d.qualname)
        if d.kind != MODULE or d.parent is not None:
            facts[(family, directory, _local(d.qualname))].append(d.qualname)
    for ref in record.references:
        if ref.kind == "inherit":
            facts[ref.source].append(("inherit", path, ref.name))
    return facts


def _package(record: FileRecord, family: str) -> str:
    """Where a name needs no import: the file's directory; for Java its declared package."""
    java = [b.target for b in record.bindings if b.local == JAVA_PACKAGE and family == "java"]
    return f"package {java[0]}" if java else posixpath.dirname(record.path)


def _match(pattern: str, value: str) -> str | None:
    """What `*` stands for when `value` matches `pattern` ("" for an exact match), else None."""
    if "*" not in pattern:
        return "" if value == pattern else None
    prefix, _, suffix = pattern.partition("*")
    if value.startswith(prefix) and value.endswith(suffix) and len(value) >= len(pattern) - 1:
        return value[len(prefix) : len(value) - len(suffix)]
    return None
