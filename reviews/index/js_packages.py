"""Which TypeScript/JavaScript modules a package's users can reach (pure).

A module is public when its package is published (not `"private": true`) and the module is
one of the package's entry points (`exports`, `main`, `module`, `types`/`typings`, `bin`,
`browser`) or is re-exported from one (`export … from`, an imported name exported again,
`module.exports = require(…)`), followed transitively. A docs site, a benchmark or an app in a
monorepo is its own private package; a helper under `src/_lib/` that no entry re-exports is an
implementation detail.

Entry points often name build output (`./dist/index.js`) that a source repository does not
hold: the same path under `src/` (or `source/`, `lib/`) with a source extension stands in.
A package whose entry points resolve to nothing known, or a file with no package.json above
it, keeps the older rule: every module is public.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

ENTRY_FIELDS = ("main", "module", "types", "typings", "browser", "bin", "exports")
_SOURCE_EXTENSIONS = (
    ".ts",
    ".tsx",
    ".d.ts",
    ".mts",
    ".d.mts",
    ".cts",
    ".d.cts",
    ".js",
    ".mjs",
    ".cjs",
    ".jsx",
)


@dataclass(frozen=True)
class Package:
    root: str  # directory of its package.json ("" for the repository root)
    private: bool
    entries: tuple[str, ...]  # entry specifiers, relative to root (may hold one `*`)


def read_packages(files: Mapping[str, str]) -> dict[str, Package]:
    """Every package.json in `files` outside node_modules, by directory."""
    out: dict[str, Package] = {}
    for path, text in files.items():
        pure = PurePosixPath(path)
        if pure.name != "package.json" or "node_modules" in pure.parts:
            continue
        try:
            manifest = json.loads(text)
        except ValueError:
            continue
        if not isinstance(manifest, dict):
            continue
        root = pure.parent.as_posix()
        root = "" if root == "." else root
        out[root] = Package(
            root=root,
            private=manifest.get("private") is True,
            entries=tuple(dict.fromkeys(_entry_strings(manifest))),
        )
    return out


def _entry_strings(manifest: Mapping[str, object]) -> Iterable[str]:
    for key in ENTRY_FIELDS:
        yield from _leaves(manifest.get(key))


def _leaves(value: object) -> Iterable[str]:
    """The file paths in an entry field: a string, or the values of (nested) maps of
    subpaths and conditions (`{".": {"import": "./x.mjs", "types": "./x.d.ts"}}`)."""
    if isinstance(value, str):
        if value.startswith(".") or "/" in value or value.endswith(tuple(_SOURCE_EXTENSIONS)):
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


def owner_of(path: str, packages: Mapping[str, Package]) -> Package | None:
    """The package whose directory holds `path` most closely."""
    best: Package | None = None
    for root, package in packages.items():
        if (root == "" or path.startswith(root + "/")) and (
            best is None or len(root) > len(best.root)
        ):
            best = package
    return best


def resolve(importer: str, specifier: str, known: Iterable[str] | set[str]) -> str | None:
    """The file a relative specifier names from `importer`, trying the extensions and index
    files TypeScript and Node try (`./x.js` may be `x.ts` in the source)."""
    if not specifier.startswith("."):
        return None
    base = PurePosixPath(importer).parent / specifier
    return _existing(_normal(base.as_posix()), known)


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/".join(parts)


def _existing(path: str, known: Iterable[str] | set[str]) -> str | None:
    known = known if isinstance(known, set) else set(known)
    stem = path
    for ext in (".d.ts", ".d.mts", ".d.cts", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx"):
        if path.endswith(ext):
            stem = path[: -len(ext)]
            break
    candidates = [path] + [stem + ext for ext in _SOURCE_EXTENSIONS]
    candidates += [f"{path}/index{ext}" for ext in _SOURCE_EXTENSIONS]
    return next((c for c in candidates if c in known), None)


def entry_files(package: Package, known: set[str]) -> set[str]:
    """The files a package's entry points name, build output mapped to source where only the
    source is here; patterns (`./*`) match every file they cover."""
    found: set[str] = set()
    prefix = f"{package.root}/" if package.root else ""
    for entry in package.entries:
        target = _normal(prefix + entry)
        if "*" in target:
            found |= _pattern_files(target, known)
            continue
        hit = _existing(target, known)
        if hit is None:
            hit = _source_for(target, prefix, known)
        if hit is not None:
            found.add(hit)
    return found


def _source_for(target: str, prefix: str, known: set[str]) -> str | None:
    """Build output (`dist/index.js`, `distribution/index.d.ts`) the repository does not hold:
    the same path under the source directories, with a source extension."""
    inner = target[len(prefix) :].split("/")
    if len(inner) < 2 or any(p.startswith(prefix + inner[0] + "/") for p in known):
        return None  # the output directory is committed: its files are the entry points
    for source_dir in ("src", "source", "lib"):
        found = _existing(prefix + "/".join([source_dir, *inner[1:]]), known)
        if found is not None:
            return found
    return None


def _pattern_files(pattern: str, known: set[str]) -> set[str]:
    head, _, tail = pattern.partition("*")
    stem_tail = tail
    for ext in _SOURCE_EXTENSIONS:
        if tail.endswith(ext):
            stem_tail = tail[: -len(ext)]
            break
    regex = re.compile(re.escape(head) + r"(.+)" + re.escape(stem_tail) + r"(\.[a-z.]+)?$")
    return {path for path in known if regex.match(path)}


def public_modules(
    modules: Iterable[str], links: Mapping[str, Iterable[str]], packages: Mapping[str, Package]
) -> set[str]:
    """The modules users can reach: see the module docstring. `links` maps a module to the
    specifiers it re-exports."""
    known = set(modules)
    by_package: dict[str | None, list[str]] = {}
    for path in known:
        owner = owner_of(path, packages)
        by_package.setdefault(owner.root if owner else None, []).append(path)
    public: set[str] = set(by_package.pop(None, []))
    for root, paths in by_package.items():
        package = packages[root]  # type: ignore[index]
        if package.private:
            continue
        entries = entry_files(package, known) if package.entries else set()
        if not entries:
            entries = {p for p in paths if PurePosixPath(p).name.startswith("index.")}
            entries = {p for p in entries if PurePosixPath(p).parent.as_posix() == (root or ".")}
        if not entries:
            public.update(paths)  # a layout this cannot read: everything, as before
            continue
        seen, queue = set(entries), list(entries)
        while queue:
            current = queue.pop()
            for specifier in links.get(current, ()):
                target = resolve(current, specifier, known)
                if target is not None and target not in seen:
                    seen.add(target)
                    queue.append(target)
        public |= seen
    return public
