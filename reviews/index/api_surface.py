"""The exported surface of a change's modules and packages, and its comparison.

Every language's surface is read with the same tree-sitter grammars as the code index, each by
its own reader: TypeScript/JavaScript modules (api_typescript), Go packages (api_go), Rust crates
(api_rust) and Java packages (api_java). Test files, vendored trees and packages that cannot be
imported are nobody's API.

Signatures are kept as parameter types (names do not matter to a caller) and the result type.
The comparison (`compare_surfaces`) is pure: removed or changed exports break callers; new
exports and new optional trailing parameters are additions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import tree_sitter as ts

from reviews.domain.indexed_files import is_test_path, language_for, skip_reason_for_path
from reviews.index import ts_types
from reviews.index.api_exports import Export, Surface, with_overload
from reviews.index.api_go import go_declarations, go_exports, go_resolved
from reviews.index.api_java import exported_packages, java_exports, public_package
from reviews.index.api_java import package_of as java_package
from reviews.index.api_python import ApiChange
from reviews.index.api_rust import rust_surface
from reviews.index.api_typescript import js_export_statement, js_exports
from reviews.index.js_packages import public_modules, read_packages
from reviews.index.treesitter_parse import _parser

JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
SURFACE_LANGUAGES = JS_LANGUAGES | {"go", "rust", "java"}
_GO_NOT_IMPORTABLE = frozenset({"internal", "testdata"})


@dataclass(frozen=True, slots=True)
class SurfaceReport:
    modules: tuple[str, ...]  # modules/packages that have a surface on either side
    changes: tuple[ApiChange, ...]
    errors: tuple[str, ...] = field(default=())


# -- the pure comparison ---------------------------------------------------------------------


def compare_surfaces(base: Surface, head: Surface) -> tuple[ApiChange, ...]:
    """Removed or changed exports are breaking; new ones and new optional trailing parameters
    are additive. A surface compared with itself has no changes."""
    out: list[ApiChange] = []
    for where in sorted(base.keys() - head.keys()):
        out.append(ApiChange("breaking", where, f"exported {base[where].kind} removed"))
    for where in sorted(head.keys() - base.keys()):
        out.append(ApiChange("additive", where, f"exported {head[where].kind} added"))
    for where in sorted(base.keys() & head.keys()):
        old, new = base[where], head[where]
        if old == new:
            continue
        if old.kind != new.kind:
            out.append(ApiChange("breaking", where, f"changed from {old.kind} to {new.kind}"))
        elif old.kind == "enum" and (added := _enum_added(old.returns, new.returns)):
            out.append(ApiChange("additive", where, "enum member(s) added: " + ", ".join(added)))
        elif (shapes := _call_shapes(old)) is not None and shapes <= (
            wider := _call_shapes(new) or set()
        ):
            if wider - shapes:
                what = "overload added" if new.overloads else "optional parameter added"
                out.append(ApiChange("additive", where, what))
        else:
            message = f"signature changed from {old.signature} to {new.signature}"
            typed = _typescript_judgement(where, old, new)
            if typed in ("same", "compatible"):
                out.append(ApiChange("additive", where, message + _COMPATIBLE_NOTE))
            elif typed == "unknown":
                out.append(ApiChange("unknown", where, message + _UNKNOWN_NOTE))
            elif _same_but_foreign_names(old.signature, new.signature):
                out.append(ApiChange("unknown", where, message + _FOREIGN_NOTE))
            else:
                out.append(ApiChange("breaking", where, message))
    return tuple(out)


_TS_MODULES = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
_COMPATIBLE_NOTE = " (compatible: every old use still type-checks)"
_UNKNOWN_NOTE = (
    " (uncertain: whether users break depends on types the text does not settle;"
    " a type checker would)"
)


def _typescript_judgement(where: str, old: Export, new: Export) -> str:
    """ts_types' judgement of a TS/JS export whose types changed, or "" where it does not
    apply (another language, another kind, another number of parameters)."""
    if not surface_owner(where).endswith(_TS_MODULES) or old.kind != new.kind:
        return ""
    if old.overloads or new.overloads:
        return ""
    if old.params is None and new.params is None:
        if old.kind not in ("type", "variable"):
            return ""
        position: ts_types.Position = "output" if old.kind == "variable" else "both"
        return ts_types.judge(old.returns, new.returns, position)
    if old.params is None or new.params is None or len(old.params) != len(new.params):
        return ""
    found: list[ts_types.Judgement] = [ts_types.judge(old.returns, new.returns, "output")]
    for before, after in zip(old.params, new.params, strict=True):
        if before.endswith("?") != after.endswith("?") or before[:3] != after[:3]:
            return ""  # optionality or rest changed: the call shapes decided that
        found.append(ts_types.judge(before.rstrip("?"), after.rstrip("?"), "input"))
    return ts_types.worst(*found)


# A name from another package (`flag.ParseErrorsAllowlist`, `React.FC`): its definition is not
# in the repository, so two of them may be one type under two names (an alias).
_QUALIFIED = re.compile(r"\b[A-Za-z_]\w*\.[A-Z]\w*")
_FOREIGN_NOTE = (
    " (uncertain: only names from another package differ, and they may be aliases of one type)"
)


def _same_but_foreign_names(old: str, new: str) -> bool:
    return _QUALIFIED.sub("·", old) == _QUALIFIED.sub("·", new) and old != new


def _enum_members(body: str) -> list[str]:
    """The members of a canonical enum body (`{A = 1, B}`), split at top-level commas."""
    inner = body.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        return []
    members, depth, current = [], 0, ""
    for char in inner[1:-1]:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            members.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        members.append(current.strip())
    return members


def _enum_added(old_body: str, new_body: str) -> list[str]:
    """New members when every old member stands as it was (name and value): a caller's use of
    the enum still compiles. Empty when a member was removed or changed."""
    old, new = _enum_members(old_body), _enum_members(new_body)
    if not old or not set(old) <= set(new):
        return []
    return [m.split("=")[0].strip() for m in new if m not in set(old)]


def _call_shapes(export: Export) -> set[tuple[str, ...]] | None:
    """Every way a caller can call it: for each signature (each overload), the parameter types
    of each accepted argument count, and the result type. None for what is not callable. A
    change that keeps every old shape keeps every old call compiling."""
    signatures = export.overloads or (export,)
    if any(s.params is None for s in signatures):
        return None
    shapes: set[tuple[str, ...]] = set()
    for signature in signatures:
        params = signature.params or ()
        required = 0
        while (
            required < len(params)
            and not params[required].endswith("?")
            and not params[required].startswith("...")
        ):
            required += 1
        for count in range(required, len(params) + 1):
            taken = tuple(p.removesuffix("?") for p in params[:count])
            shapes.add((*taken, "->", signature.returns))
    return shapes


# -- reading a surface -----------------------------------------------------------------------


def surface_file(path: str) -> bool:
    """Files whose exports are read: TS/JS and Go source outside tests and vendored trees."""
    language = language_for(path)
    if language not in SURFACE_LANGUAGES or skip_reason_for_path(path) is not None:
        return False
    if is_test_path(path) or path.endswith("_test.go"):
        return False
    parts = PurePosixPath(path).parts[:-1]
    return not (language == "go" and any(p in _GO_NOT_IMPORTABLE for p in parts))


def exported_surface(files: Mapping[str, str]) -> tuple[dict[str, Export], list[str]]:
    """(surface, errors) of every Go package, every TS/JS module users can reach in `files`
    (`js_packages.public_modules`: entry points and what they re-export, published packages
    only), every Rust library crate (`api_rust`) and every Java package (`api_java`)."""
    surface, errors, _ = _read_surface(files)
    return surface, errors


def _read_surface(files: Mapping[str, str]) -> tuple[dict[str, Export], list[str], set[str]]:
    """(surface, errors, what the grammar could not read whole). The last holds `owner:Name`
    for a declaration that did not parse (it and its members are not trusted), and `owner`
    alone where an unparsed statement may hide declarations (a name missing from it is not
    trusted to be gone), or where a whole Rust crate or Java package was read in part."""
    surface: dict[str, Export] = {}
    unsure: set[str] = set()
    errors: dict[str, str] = {}
    modules: dict[str, dict[str, Export]] = {}
    links: dict[str, list[str]] = {}
    go_surface: dict[str, Export] = {}
    go_aliases: dict[str, dict[str, str]] = {}  # package → its aliases
    java_exported = exported_packages(files)
    for path in sorted(p for p in files if surface_file(p)):
        language = language_for(path)
        if language == "rust":
            continue  # read per crate, from its lib.rs, below
        tree = _parser(language or "").parse(files[path].encode("utf-8", "replace"))
        if tree.root_node.has_error:
            errors[path] = f"{path}: syntax errors, exports may be incomplete"
        if language == "java":
            package = java_package(tree.root_node)
            if not public_package(package, java_exported):
                continue
            if path in errors:
                unsure.add(package)
            for name, signatures in java_exports(tree.root_node).items():
                where = f"{package}:{name}"
                for kind, params, returns in signatures:
                    surface[where] = with_overload(
                        surface.get(where), Export(kind, params, returns)
                    )
            continue
        if language == "go":
            owner = PurePosixPath(path).parent.as_posix()
            owner = "" if owner == "." else owner
            found = go_exports(tree.root_node, go_aliases.setdefault(owner, {}))
            if found is None:  # package main: not importable
                continue
            for name, export in found.items():
                go_surface[f"{owner}:{name}"] = export
        else:
            owner = path
            links[path] = []
            modules[path] = js_exports(
                tree.root_node, typed=language != "javascript", links=links[path]
            )
        if path in errors:
            unsure |= _unparsed(tree.root_node, owner, language or "")
    for where, export in go_surface.items():
        surface[where] = go_resolved(export, go_aliases.get(surface_owner(where), {}))
    public = public_modules(modules, links, read_packages(files))
    for path in sorted(public):
        for name, export in modules[path].items():
            surface[f"{path}:{name}"] = export
    rust, rust_errors = rust_surface(files)
    for where, signatures in rust.items():
        for kind, params, returns in signatures:
            surface[where] = with_overload(surface.get(where), Export(kind, params, returns))
    if rust_errors:  # a crate read in part: none of its names is trusted to have gone
        unsure |= {surface_owner(w) for w in rust}
    read = [e for p, e in errors.items() if language_for(p) in ("go", "java") or p in public]
    return surface, read + rust_errors, unsure


def _unparsed(root: ts.Node, owner: str, language: str) -> set[str]:
    """What a file with syntax errors leaves unsure, declaration by declaration: the names an
    export statement (or Go declaration) with an error declares, and the file's owner when a
    statement the grammar could not place might hide declarations."""
    out: set[str] = set()
    for node in root.named_children:
        if not node.has_error:
            continue
        names: dict[str, Export] = {}
        if language == "go" and node.type in (
            "function_declaration",
            "method_declaration",
            "type_declaration",
            "const_declaration",
            "var_declaration",
        ):
            names.update(go_declarations([node]) or {})
        elif language != "go" and node.type == "export_statement":
            js_export_statement(node, names, {}, typed=language != "javascript")
        if names:
            out |= {f"{owner}:{name}" for name in names}
        else:
            out.add(owner)
    return out


def surface_owner(where: str) -> str:
    return where.rpartition(":")[0]


def compare_exported(base_files: Mapping[str, str], head_files: Mapping[str, str]) -> SurfaceReport:
    """Both sides' surfaces compared. A module the grammar could not read whole on either side
    (`errors`) is not trusted to have lost an export: what looks removed or changed there is
    `unknown` (named, never a break), so one declaration the grammar does not know decides
    nothing about the rest."""
    base, base_errors, base_unsure = _read_surface(base_files)
    head, head_errors, head_unsure = _read_surface(head_files)
    errors = tuple(dict.fromkeys([*base_errors, *head_errors]))
    unreadable = base_unsure | head_unsure
    changes = []
    for change in compare_surfaces(base, head):
        where = change.where
        declaration = any(where == u or where.startswith(u + ".") for u in unreadable)
        # An owner alone: something unparsed may hide a name, so only a removal is unsure.
        hidden = surface_owner(where) in unreadable and where not in head
        if change.severity == "breaking" and (declaration or hidden):
            change = ApiChange(
                "unknown",
                change.where,
                change.message + " (uncertain: the grammar could not read all of this file)",
            )
        changes.append(change)
    modules = sorted({surface_owner(w) or "." for w in (*base, *head)})
    return SurfaceReport(modules=tuple(modules), changes=tuple(changes), errors=errors)


# -- Go --------------------------------------------------------------------------------------


# -- TypeScript / JavaScript -----------------------------------------------------------------


__all__ = [
    "SurfaceReport",
    "compare_exported",
    "compare_surfaces",
    "exported_surface",
    "surface_file",
]
