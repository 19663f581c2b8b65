"""The public surface of Java code, read with tree-sitter (pure).

What a library's users can reach: public types (classes, interfaces, enums, records,
annotations; nested ones too) and their public and protected members — methods with their
parameter types and result, constructors, fields, enum constants, record components. An
interface's members are public unless declared private. Packages named `internal` or `impl`
anywhere in their name are implementation; when the code has a `module-info.java`, only the
packages it `exports` are API. Overloads are kept together and compared by the calls they
accept (api_surface.compare_surfaces).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath

import tree_sitter as ts

from reviews.index.treesitter_parse import _parser
from reviews.index.type_text import canonical, text_of

#: name → (kind, parameter types or None, result) of each overload.
Signatures = dict[str, list[tuple[str, tuple[str, ...] | None, str]]]

_TYPES = (
    "class_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "annotation_type_declaration",
)
_HIDDEN_PACKAGES = frozenset({"internal", "impl"})


def exported_packages(files: Mapping[str, str]) -> set[str] | None:
    """The packages `module-info.java` exports (qualified exports included: they are API to
    those modules); None without a module descriptor."""
    found: set[str] | None = None
    for path, text in files.items():
        if PurePosixPath(path).name != "module-info.java":
            continue
        found = found or set()
        tree = _parser("java").parse(text.encode("utf-8", "replace"))
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            if node.type == "exports_module_directive" and node.named_children:
                found.add(text_of(node.named_children[0]))
            stack.extend(node.named_children)
    return found


def package_of(root: ts.Node) -> str:
    for node in root.named_children:
        if node.type == "package_declaration" and node.named_children:
            return text_of(node.named_children[0])
    return ""


def public_package(package: str, exported: set[str] | None) -> bool:
    if any(part in _HIDDEN_PACKAGES for part in package.split(".")):
        return False
    return exported is None or package in exported


def java_exports(root: ts.Node) -> Signatures:
    """The file's public surface: each name with its signatures (several for overloads)."""
    out: Signatures = {}
    for node in root.named_children:
        if node.type in _TYPES and _visible(node, interface_member=False):
            _type(node, text_of(node.child_by_field_name("name")), out)
    return out


def _type(node: ts.Node, name: str, out: Signatures) -> None:
    kind = node.type.removesuffix("_declaration")
    interface = kind in ("interface", "annotation_type")
    generics = canonical(node.child_by_field_name("type_parameters"))
    out.setdefault(name, []).append((kind, None, generics))
    if kind == "record":  # components are its accessors and its canonical constructor
        params = node.child_by_field_name("parameters")
        types = tuple(
            canonical(p.child_by_field_name("type"))
            for p in (params.named_children if params else ())
            if p.type == "formal_parameter"
        )
        out.setdefault(f"{name}.<init>", []).append(("constructor", types, ""))
        for p in params.named_children if params else ():
            if p.type == "formal_parameter":
                component = text_of(p.child_by_field_name("name"))
                out.setdefault(f"{name}.{component}", []).append(
                    ("method", (), canonical(p.child_by_field_name("type")))
                )
    body = node.child_by_field_name("body")
    members = list(body.named_children) if body is not None else []
    for member in list(members):
        if member.type == "enum_body_declarations":
            members.extend(member.named_children)
    for member in members:
        if member.type == "enum_constant":
            constant = text_of(member.child_by_field_name("name"))
            out.setdefault(f"{name}.{constant}", []).append(("constant", None, ""))
            continue
        if not _visible(member, interface_member=interface):
            continue
        member_name = text_of(member.child_by_field_name("name"))
        if member.type in _TYPES:
            _type(member, f"{name}.{member_name}", out)
        elif member.type == "constructor_declaration":
            out.setdefault(f"{name}.<init>", []).append(("constructor", _params(member), ""))
        elif member.type == "method_declaration":
            generics = canonical(member.child_by_field_name("type_parameters"))
            returns = canonical(member.child_by_field_name("type"))
            out.setdefault(f"{name}.{member_name}", []).append(
                ("method", _params(member), f"{generics} {returns}".strip())
            )
        elif member.type in ("field_declaration", "constant_declaration"):
            typ = canonical(member.child_by_field_name("type"))
            for declarator in member.children_by_field_name("declarator"):
                field = text_of(declarator.child_by_field_name("name"))
                out.setdefault(f"{name}.{field}", []).append(("field", None, typ))


def _params(member: ts.Node) -> tuple[str, ...]:
    params = member.child_by_field_name("parameters")
    out = []
    for p in params.named_children if params is not None else ():
        if p.type == "formal_parameter":
            out.append(canonical(p.child_by_field_name("type")))
        elif p.type == "spread_parameter":
            kinds = ("modifiers", "variable_declarator")
            typ = next((c for c in p.named_children if c.type not in kinds), None)
            out.append("..." + canonical(typ))
    return tuple(out)


def _visible(node: ts.Node, *, interface_member: bool) -> bool:
    modifiers = next((c for c in node.named_children if c.type == "modifiers"), None)
    words = set(text_of(modifiers).split()) if modifiers is not None else set()
    if interface_member:
        return "private" not in words
    return bool(words & {"public", "protected"})
