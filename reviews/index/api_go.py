"""The exported surface of a Go package: every capitalised top-level name (functions, types,
constants, variables) and the exported methods and struct fields of exported types, with
signatures kept as parameter and result types. Split from api_surface, which reads every
language's surface and compares two of them, so each language's reader stands alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import tree_sitter as ts

from reviews.index.api_exports import Export
from reviews.index.type_text import joined as _joined
from reviews.index.type_text import text_of as _text


def _exported_go(name: str) -> bool:
    return name[:1].isupper()


def go_exports(root: ts.Node, aliases: dict[str, str] | None = None) -> dict[str, Export] | None:
    """A Go file's exports; `aliases` collects the file's type aliases (`type A = B`) and named
    function types (`type F func(int) error`) by name, with what they stand for."""
    return go_declarations(root.named_children, aliases)


def go_declarations(
    nodes: list[ts.Node], aliases: dict[str, str] | None = None
) -> dict[str, Export] | None:
    out: dict[str, Export] = {}
    aliases = {} if aliases is None else aliases
    for node in nodes:
        kind = node.type
        if kind == "package_clause":
            if _text(node.named_children[0] if node.named_children else None) == "main":
                return None
        elif kind == "function_declaration":
            name = _text(node.child_by_field_name("name"))
            if _exported_go(name):
                out[name] = _go_callable("function", node)
        elif kind == "method_declaration":
            receiver = node.child_by_field_name("receiver")
            param = receiver.named_children[0] if receiver and receiver.named_children else None
            owner = _text(param.child_by_field_name("type")) if param else ""
            owner = owner.lstrip("*").split("[", 1)[0]
            name = _text(node.child_by_field_name("name"))
            if _exported_go(owner) and _exported_go(name):
                out[f"{owner}.{name}"] = _go_callable("method", node)
        elif kind == "type_declaration":
            for spec in node.named_children:
                if spec.type in ("type_spec", "type_alias"):
                    out.update(_go_type(spec))
                    body = spec.child_by_field_name("type")
                    if body is not None and (
                        spec.type == "type_alias" or body.type == "function_type"
                    ):
                        aliases[_text(spec.child_by_field_name("name"))] = _go_canon(body)
        elif kind in ("const_declaration", "var_declaration"):
            what = "constant" if kind == "const_declaration" else "variable"
            for spec in node.named_children:
                typ = _go_canon(spec.child_by_field_name("type"))
                for ident in spec.children_by_field_name("name"):
                    if _exported_go(_text(ident)):
                        out[_text(ident)] = Export(what, None, typ)
    return out


def _go_callable(kind: str, node: ts.Node) -> Export:
    params: list[str] = []
    for param in (node.child_by_field_name("parameters") or node).named_children:
        if param.type not in ("parameter_declaration", "variadic_parameter_declaration"):
            continue
        typ = _go_canon(param.child_by_field_name("type"))
        if param.type == "variadic_parameter_declaration":
            typ = f"...{typ}"
        params.extend([typ] * max(1, len(param.children_by_field_name("name"))))
    result = node.child_by_field_name("result")
    if result is not None and result.type == "parameter_list":
        types = [
            _go_canon(p.child_by_field_name("type"))
            for p in result.named_children
            for _ in range(max(1, len(p.children_by_field_name("name"))))
        ]
        returns = f"({', '.join(types)})" if len(types) > 1 else "".join(types)
    else:
        returns = _go_canon(result)
    return Export(kind, tuple(params), returns)


def _go_canon(node: ts.Node | None) -> str:
    """A Go type written one way: comments and layout dropped, and in function types the
    parameter and result names too (`func(ctx context.Context) error` is `func(context.Context)
    error`), since they are not part of the type."""
    if node is None:
        return ""
    if node.type == "function_type":
        return "func" + _go_callable("function", node).signature.replace(" -> ", " ")
    if node.type == "comment":
        return ""
    if node.child_count == 0:
        return _text(node)
    return _joined([piece for child in node.children if (piece := _go_canon(child))])


_GO_WORD = r"(?<![\w.]){}(?![\w])"


def go_resolved(export: Export, aliases: Mapping[str, str]) -> Export:
    """An export's types with the package's aliases and named function types replaced by
    what they stand for: `[]Completion` with `type Completion = string` is `[]string`, the
    identical type, and a parameter of named type `F func(int)` accepts every `func(int)` a
    caller passes."""
    if not aliases:
        return export

    def resolve(text: str) -> str:
        for _ in range(5):  # an alias of an alias
            before = text
            for name, target in aliases.items():
                text = re.sub(_GO_WORD.format(re.escape(name)), target, text)
            if text == before:
                break
        return text

    params = None if export.params is None else tuple(resolve(p) for p in export.params)
    returns = (
        export.returns
        if export.params is None and export.kind == "type"
        else resolve(export.returns)
    )
    return Export(export.kind, params, returns)


def _go_type(spec: ts.Node) -> dict[str, Export]:
    name = _text(spec.child_by_field_name("name"))
    if not _exported_go(name):
        return {}
    body = spec.child_by_field_name("type")
    out: dict[str, Export] = {}
    if body is not None and body.type == "struct_type":
        out[name] = Export("struct")
        fields = next((c for c in body.named_children if c.type == "field_declaration_list"), None)
        for decl in fields.named_children if fields is not None else ():
            typ = _go_canon(decl.child_by_field_name("type"))
            for ident in decl.children_by_field_name("name"):
                if _exported_go(_text(ident)):
                    out[f"{name}.{_text(ident)}"] = Export("field", None, typ)
    elif body is not None and body.type == "interface_type":
        out[name] = Export("interface")
        for member in body.named_children:
            if member.type == "method_elem":
                method = _text(member.child_by_field_name("name"))
                if _exported_go(method):
                    out[f"{name}.{method}"] = _go_callable("method", member)
    else:
        out[name] = Export("type", None, _go_canon(body))
    return out
