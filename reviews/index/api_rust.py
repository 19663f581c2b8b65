"""The public surface of a Rust library crate, read with tree-sitter (pure).

What a crate's users can reach: `pub` items (not `pub(crate)`, `pub(super)` or `pub(in …)`)
of modules reachable from `src/lib.rs` through `pub mod`, items that a reachable module
re-exports with `pub use` (under the name it gives them, followed into private modules), the
`pub fn`s of inherent `impl` blocks of those types, and `#[macro_export]` macros. A binary
crate (no `src/lib.rs`) has no API.

Signatures follow what breaks a caller, as cargo-semver-checks counts it: a function's
parameter types, result, generics and `where` bounds; a struct's public fields; an enum's
variants, unless it is `#[non_exhaustive]` (a variant added to an exhaustive enum breaks every
exhaustive `match`); a trait's required methods (one added breaks every implementor).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import tree_sitter as ts

from reviews.index.treesitter_parse import _parser
from reviews.index.type_text import canonical, text_of

#: name → (kind, parameter types or None, result) of each definition.
Signatures = dict[str, list[tuple[str, tuple[str, ...] | None, str]]]
_CRATE_NAME = re.compile(r"^\[package\][^\[]*?^\s*name\s*=\s*\"([^\"]+)\"", re.M | re.S)


@dataclass
class _Module:
    items: Signatures = field(default_factory=dict)
    children: list[tuple[str, bool, ts.Node | None]] = field(default_factory=list)
    uses: list[tuple[tuple[str, ...], str, bool]] = field(default_factory=list)  # path, as, glob
    macros: list[str] = field(default_factory=list)


def crate_roots(files: Mapping[str, str]) -> dict[str, str]:
    """`src/lib.rs` of every library crate → its crate name (the package's, `-` as `_`)."""
    out: dict[str, str] = {}
    for path, text in files.items():
        pure = PurePosixPath(path)
        if pure.name != "Cargo.toml":
            continue
        root = pure.parent / "src" / "lib.rs"
        key = root.as_posix().removeprefix("./")
        if key in files:
            found = _CRATE_NAME.search(text)
            name = found.group(1) if found else (pure.parent.name or "crate")
            out[key] = name.replace("-", "_")
    return out


def rust_surface(files: Mapping[str, str]) -> tuple[Signatures, list[str]]:
    """(where → signatures, files the grammar could not read whole) of every library crate.
    `where` is `crate::module:Item` (`anyhow:Error.context`)."""
    surface: Signatures = {}
    errors: list[str] = []
    for lib, crate in sorted(crate_roots(files).items()):
        modules: dict[tuple[str, ...], _Module] = {}
        public: set[tuple[str, ...]] = set()
        _load(files, lib, (), modules, public, errors, is_owner=True, pub=True)
        for path in sorted(public):
            module = modules[path]
            owner = "::".join((crate, *path))
            for name, sigs in module.items.items():
                surface.setdefault(f"{owner}:{name}", []).extend(sigs)
            for segments, alias, glob in module.uses:
                _reexport(modules, path, segments, alias, glob, owner, surface)
        for macro in modules[()].macros if () in modules else []:
            surface.setdefault(f"{crate}:{macro}!", []).append(("macro", None, ""))
    return surface, errors


def _load(
    files: Mapping[str, str],
    path: str,
    module: tuple[str, ...],
    modules: dict[tuple[str, ...], _Module],
    public: set[tuple[str, ...]],
    errors: list[str],
    *,
    is_owner: bool,
    pub: bool,
    node: ts.Node | None = None,
) -> None:
    if node is None:
        text = files.get(path)
        if text is None:
            return
        tree = _parser("rust").parse(text.encode("utf-8", "replace"))
        node = tree.root_node
        if node.has_error:
            errors.append(f"{path}: syntax errors, exports may be incomplete")
    read = _Module()
    _read(node, read)
    modules[module] = read
    if pub:
        public.add(module)
    pure = PurePosixPath(path)
    directory = pure.parent if is_owner else pure.parent / pure.stem
    for name, child_pub, inline in read.children:
        child = (*module, name)
        visible = pub and child_pub
        if inline is not None:
            _load(
                files,
                path,
                child,
                modules,
                public,
                errors,
                is_owner=is_owner,
                pub=visible,
                node=inline,
            )
            continue
        flat, nested = (directory / f"{name}.rs").as_posix(), (directory / name / "mod.rs")
        target = flat if flat in files else nested.as_posix()
        _load(
            files,
            target,
            child,
            modules,
            public,
            errors,
            is_owner=target.endswith("/mod.rs"),
            pub=visible,
        )


def _read(node: ts.Node, into: _Module) -> None:
    attributes: list[str] = []
    for item in node.named_children:
        if item.type == "attribute_item":
            attributes.append(text_of(item))
            continue
        marks, attributes = " ".join(attributes), []
        visible = _pub(item)
        kind = item.type
        name = text_of(item.child_by_field_name("name"))
        if kind == "mod_item":
            body = item.child_by_field_name("body")
            into.children.append((name, visible, body))
        elif kind == "use_declaration" and visible:
            for segments, alias, glob in _use_paths(item.child_by_field_name("argument"), ()):
                into.uses.append((segments, alias, glob))
        elif kind == "macro_definition" and "macro_export" in marks:
            into.macros.append(name)
        elif kind == "impl_item" and item.child_by_field_name("trait") is None:
            owner = _type_name(item.child_by_field_name("type"))
            body = item.child_by_field_name("body")
            for member in body.named_children if body is not None else ():
                if member.type == "function_item" and _pub(member):
                    method = text_of(member.child_by_field_name("name"))
                    _add(into.items, f"{owner}.{method}", _function("method", member))
        elif visible:
            for key, signature in _item(kind, name, item, marks):
                _add(into.items, key, signature)


def _item(kind: str, name: str, item: ts.Node, marks: str) -> list[tuple[str, tuple]]:
    generics = canonical(item.child_by_field_name("type_parameters"))
    if kind == "function_item":
        return [(name, _function("function", item))]
    if kind == "struct_item":
        out: list[tuple[str, tuple]] = [(name, ("struct", None, generics))]
        body = item.child_by_field_name("body")
        for f in body.named_children if body is not None else ():
            if f.type == "field_declaration" and _pub(f):
                typ = canonical(f.child_by_field_name("type"))
                out.append(
                    (f"{name}.{text_of(f.child_by_field_name('name'))}", ("field", None, typ))
                )
        return out
    if kind == "enum_item":
        body = item.child_by_field_name("body")
        variants = [
            canonical(v) for v in (body.named_children if body else ()) if v.type == "enum_variant"
        ]
        if "non_exhaustive" in marks:
            out = [(name, ("enum", None, f"{generics} #[non_exhaustive]".strip()))]
            return out + [
                (f"{name}.{v.split('(')[0].split('{')[0].strip()}", ("variant", None, v))
                for v in variants
            ]
        # Every variant is part of an exhaustive enum's type: a new one breaks each `match`.
        return [(name, ("exhaustive enum", None, f"{generics} {{{', '.join(variants)}}}".strip()))]
    if kind == "trait_item":
        body = item.child_by_field_name("body")
        members = list(body.named_children) if body is not None else []
        required = sorted(
            text_of(m.child_by_field_name("name"))
            for m in members
            if m.type == "function_signature_item"
        )
        out = [(name, ("trait", None, f"{generics} requires {', '.join(required)}".strip()))]
        for m in members:
            if m.type in ("function_signature_item", "function_item"):
                out.append(
                    (f"{name}.{text_of(m.child_by_field_name('name'))}", _function("method", m))
                )
        return out
    if kind == "type_item":
        return [
            (
                name,
                ("type", None, f"{generics} {canonical(item.child_by_field_name('type'))}".strip()),
            )
        ]
    if kind in ("const_item", "static_item"):
        return [(name, ("constant", None, canonical(item.child_by_field_name("type"))))]
    if kind == "union_item":
        return [(name, ("union", None, generics))]
    return []


def _function(kind: str, node: ts.Node) -> tuple[str, tuple[str, ...], str]:
    params: list[str] = []
    parameters = node.child_by_field_name("parameters")
    for p in parameters.named_children if parameters is not None else ():
        if p.type == "self_parameter":
            params.append(text_of(p))
        elif p.type == "parameter":
            params.append(canonical(p.child_by_field_name("type")))
    result = canonical(node.child_by_field_name("return_type"))
    generics = canonical(node.child_by_field_name("type_parameters"))
    bounds = next((canonical(c) for c in node.named_children if c.type == "where_clause"), "")
    return (kind, tuple(params), " ".join(p for p in (result, generics, bounds) if p))


def _add(items: Signatures, key: str, signature: tuple) -> None:
    items.setdefault(key, []).append(signature)


def _pub(node: ts.Node) -> bool:
    modifier = next((c for c in node.named_children if c.type == "visibility_modifier"), None)
    return modifier is not None and text_of(modifier) == "pub"


def _type_name(node: ts.Node | None) -> str:
    if node is None:
        return ""
    if node.type == "generic_type":
        return _type_name(node.child_by_field_name("type"))
    return text_of(node).rsplit("::", 1)[-1]


def _use_paths(
    node: ts.Node | None, prefix: tuple[str, ...]
) -> list[tuple[tuple[str, ...], str, bool]]:
    """(path segments, name it is given, glob) of each name a `use` brings in."""
    if node is None:
        return []
    kind = node.type
    if kind in ("identifier", "scoped_identifier", "self", "crate", "super"):
        segments = (*prefix, *text_of(node).split("::"))
        return [(segments, segments[-1], False)]
    if kind == "use_as_clause":
        path = node.child_by_field_name("path")
        segments = (*prefix, *text_of(path).split("::"))
        return [(segments, text_of(node.child_by_field_name("alias")), False)]
    if kind == "use_wildcard":
        inner = text_of(node).removesuffix("*").rstrip(":")
        segments = (*prefix, *(inner.split("::") if inner else ()))
        return [(segments, "*", True)]
    if kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        here = (*prefix, *(text_of(path).split("::") if path is not None else ()))
        return _use_paths(node.child_by_field_name("list"), here)
    if kind == "use_list":
        out = []
        for child in node.named_children:
            out.extend(_use_paths(child, prefix))
        return out
    return []


def _reexport(
    modules: Mapping[tuple[str, ...], _Module],
    here: tuple[str, ...],
    segments: tuple[str, ...],
    alias: str,
    glob: bool,
    owner: str,
    surface: Signatures,
) -> None:
    """A `pub use` of a reachable module: the items it names, under the name it gives them,
    with their signatures when the path leads into this crate."""
    path = list(segments)
    base: tuple[str, ...]
    if path and path[0] == "crate":
        base, path = (), path[1:]
    elif path and path[0] == "self":
        base, path = here, path[1:]
    else:
        base = here
        while path and path[0] == "super":
            base, path = base[:-1], path[1:]
    module_path = (*base, *path) if glob else (*base, *path[:-1])
    target = modules.get(module_path)
    if target is None and not glob and (path[:1] and (path[0],) in modules):
        target = modules.get((*path[:-1],))  # a 2015-style path from the crate root
        module_path = tuple(path[:-1])
    if target is None:
        name = "*" if glob else alias
        surface.setdefault(f"{owner}:{name}", []).append(("re-export", None, "::".join(segments)))
        return
    if glob:
        for name, sigs in target.items.items():
            surface.setdefault(f"{owner}:{name}", []).extend(sigs)
        return
    original = path[-1] if path else alias
    found = False
    for name, sigs in target.items.items():
        if name == original or name.startswith(original + "."):
            surface.setdefault(f"{owner}:{alias}{name[len(original) :]}", []).extend(sigs)
            found = True
    if not found:  # a module, a macro or what this reader does not parse: the name stands
        kind = "module" if (*module_path, original) in modules else "re-export"
        surface.setdefault(f"{owner}:{alias}", []).append((kind, None, "::".join(segments)))
