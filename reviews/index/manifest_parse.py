"""Manifests the resolver needs to find a repository's own code: `package.json`, `tsconfig.json`
(and `jsconfig.json`), `go.mod`.

A manifest becomes a `FileRecord` of language `manifest` with no definitions besides its module
symbol and no references; its facts are stored as bindings (`local` says which fact), so they
travel with the stored index like any other file:
- package.json: `name` → the package name; `export` → (subpath, file) for each string leaf of
  `exports` (conditions flattened), and `main`/`module`/`types`/`source` as subpath `.`;
  `dependency` → each name under dependencies/devDependencies/peerDependencies;
- tsconfig.json: `baseUrl`, `path` → (pattern, target) for each entry of `paths`, `outDir` and
  `rootDir` (all relative to the manifest's directory, as written);
- go.mod: `module` → the module path;
- Cargo.toml: `crate` → the package's name as Rust code writes it (`my-lib` → `my_lib`), which
  integration tests and examples use instead of `crate::`; `lib` → `[lib] path`, the library's
  root file when it is not `src/lib.rs`.
A manifest that does not parse yields no facts: imports it would have resolved stay unresolved
and are counted as such, never guessed.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from reviews.index.model import MODULE, Binding, Definition, FileRecord, text_digest

MANIFEST = "manifest"
MANIFEST_NAMES = frozenset(
    {"package.json", "tsconfig.json", "jsconfig.json", "go.mod", "Cargo.toml"}
)

_ENTRY_FIELDS = ("source", "module", "main", "types", "typings")
_DEPENDENCY_FIELDS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")


def is_manifest(path: str) -> bool:
    return posixpath.basename(path) in MANIFEST_NAMES


def parse_manifest(path: str, text: str) -> FileRecord:
    name = posixpath.basename(path)
    facts: list[tuple[str, str, str | None]] = []
    if name == "Cargo.toml":
        section = re.search(r"^\[package\][^\[]*?^\s*name\s*=\s*\"([^\"]+)\"", text, re.M | re.S)
        if section:
            facts.append(("crate", section.group(1).replace("-", "_"), None))
        lib = re.search(r"^\[lib\][^\[]*?^\s*path\s*=\s*\"([^\"]+)\"", text, re.M | re.S)
        if lib:
            facts.append(("lib", lib.group(1), None))
    elif name == "go.mod":
        match = re.search(r"^\s*module\s+(\S+)", text, re.MULTILINE)
        if match:
            facts.append(("module", match.group(1).strip('"'), None))
    else:
        data = _loads_jsonc(text)
        if isinstance(data, dict):
            facts.extend(_package_facts(data) if name == "package.json" else _tsconfig_facts(data))
    last_line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    module = Definition(path, name, MODULE, path, 1, last_line, None, MANIFEST)
    return FileRecord(
        path=path,
        language=MANIFEST,
        digest=text_digest(text),
        module=path,
        definitions=(module,),
        references=(),
        bindings=tuple(Binding(path, fact, target, extra) for fact, target, extra in facts),
    )


def _package_facts(data: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    facts: list[tuple[str, str, str | None]] = []
    if isinstance(data.get("name"), str):
        facts.append(("name", data["name"], None))
    exports = data.get("exports")
    if isinstance(exports, str | list) or (
        isinstance(exports, dict) and not any(k.startswith(".") for k in exports)
    ):
        exports = {".": exports}  # conditions or a single target for the package root
    if isinstance(exports, dict):
        for subpath, value in exports.items():
            for target in _string_leaves(value):
                facts.append(("export", subpath, target))
    for field in _ENTRY_FIELDS:
        if isinstance(data.get(field), str):
            facts.append(("export", ".", data[field]))
    for field in _DEPENDENCY_FIELDS:
        if isinstance(data.get(field), dict):
            facts.extend(("dependency", dep, None) for dep in data[field])
    return facts


def _tsconfig_facts(data: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    options = data.get("compilerOptions")
    if not isinstance(options, dict):
        return []
    facts: list[tuple[str, str, str | None]] = []
    for field in ("baseUrl", "outDir", "rootDir"):
        if isinstance(options.get(field), str):
            facts.append((field, options[field], None))
    paths = options.get("paths")
    if isinstance(paths, dict):
        for pattern, targets in paths.items():
            for target in _string_leaves(targets):
                facts.append(("path", pattern, target))
    return facts


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _string_leaves(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _string_leaves(item)]
    return []


_JSONC_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.DOTALL)


def _loads_jsonc(text: str) -> Any:
    """JSON with the comments and trailing commas tsconfig files allow; None if it still fails."""
    cleaned = _JSONC_TOKEN.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    try:
        return json.loads(cleaned)
    except ValueError:
        return None
