"""The exported surface of a TypeScript/JavaScript module: what `export` declares (functions,
classes and their non-private methods, interfaces, types, enums, variables, `export { … }`
lists, `export * from`, the default export) and CommonJS `module.exports`/`exports.x`, with
signatures kept as parameter and result types. Split from api_surface, which reads every
language's surface and compares two of them, so each language's reader stands alone.
"""

from __future__ import annotations

import tree_sitter as ts

from reviews.index.api_exports import Export, with_overload
from reviews.index.type_text import canonical as _canonical
from reviews.index.type_text import text_of as _text

_FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")


def js_exports(root: ts.Node, *, typed: bool, links: list[str] | None = None) -> dict[str, Export]:
    """A module's exports; `links` collects the specifiers it re-exports (what makes another
    module reachable from this one)."""
    local: dict[str, Export] = {}  # top-level declarations, for `export { a }`
    imported: dict[str, str] = {}  # local name → specifier it was imported from
    out: dict[str, Export] = {}
    links = [] if links is None else links
    for node in root.named_children:
        if node.type == "export_statement":
            js_export_statement(node, out, local, typed=typed)
            source = node.child_by_field_name("source")
            if source is not None:
                links.append(_unquoted(source))
        elif node.type == "import_statement":
            _js_imports(node, imported)
        elif node.type == "expression_statement":
            child = node.named_children[0] if node.named_children else None
            _js_commonjs(child, out, typed)
            if (required := _required_export(child)) is not None:
                links.append(required)
        else:
            local.update(_js_declaration(node, typed))
    # A name imported and exported again (`import { a } from './a'; export { a }`).
    for export in out.values():
        if export.kind == "pending" and export.returns in imported:
            links.append(imported[export.returns])
    # `export { a, b as c }` may come before the declarations it names.
    for name, export in list(out.items()):
        if export.kind != "pending":
            continue
        out.pop(name)
        target = export.returns
        members = {k: v for k, v in local.items() if k == target or k.startswith(target + ".")}
        for member, found in members.items():
            out[name + member[len(target) :]] = found
        if not members:
            out[name] = Export("binding")
    return out


def _unquoted(node: ts.Node) -> str:
    return _text(node).strip("'\"`")


def _js_imports(node: ts.Node, imported: dict[str, str]) -> None:
    source = node.child_by_field_name("source")
    if source is None:
        return
    specifier = _unquoted(source)
    for child in node.named_children:
        if child.type != "import_clause":
            continue
        for part in child.named_children:
            if part.type == "identifier":  # import a from
                imported[_text(part)] = specifier
            elif part.type == "namespace_import":  # import * as ns from
                for ident in part.named_children:
                    imported[_text(ident)] = specifier
            elif part.type == "named_imports":
                for spec in part.named_children:
                    if spec.type == "import_specifier":
                        alias = spec.child_by_field_name("alias") or spec.child_by_field_name(
                            "name"
                        )
                        imported[_text(alias)] = specifier


def _required_export(node: ts.Node | None) -> str | None:
    """`module.exports = require('./x')`: the module it hands on."""
    if node is None or node.type != "assignment_expression":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if _text(left) != "module.exports" or right is None or right.type != "call_expression":
        return None
    if _text(right.child_by_field_name("function")) != "require":
        return None
    arguments = right.child_by_field_name("arguments")
    strings = [a for a in arguments.named_children if a.type == "string"] if arguments else []
    return _unquoted(strings[0]) if strings else None


def js_export_statement(
    node: ts.Node, out: dict[str, Export], local: dict[str, Export], *, typed: bool
) -> None:
    source = node.child_by_field_name("source")
    declaration = node.child_by_field_name("declaration")
    value = node.child_by_field_name("value")
    is_default = any(c.type == "default" for c in node.children)
    clause = next((c for c in node.named_children if c.type == "export_clause"), None)
    if clause is not None:
        for spec in clause.named_children:
            if spec.type != "export_specifier":
                continue
            name = _text(spec.child_by_field_name("name"))
            alias = _text(spec.child_by_field_name("alias")) or name
            if source is not None:
                out[alias] = Export("re-export", None, f"{name} from {_text(source)}")
            else:
                out[alias] = Export("pending", None, name)
        return
    if source is not None:  # export * from './x' (or export * as ns from)
        out[f"* from {_text(source)}"] = Export("re-export")
        return
    if declaration is not None:
        found = _js_declaration(declaration, typed)
        if is_default:
            found = {"default" + k[len(k.split(".")[0]) :]: v for k, v in found.items()}
        for key, export in found.items():
            out[key] = with_overload(out.get(key), export) if export.params is not None else export
        return
    if is_default:
        target = value
        if target is None and node.named_children:
            target = node.named_children[-1]
        if target is not None and target.type in (*_FUNCTION_VALUES, "function_declaration"):
            out["default"] = _js_callable("function", target, typed)
        else:
            out["default"] = Export("value")


def _js_declaration(node: ts.Node, typed: bool) -> dict[str, Export]:
    kind = node.type
    name = _text(node.child_by_field_name("name"))
    if kind in ("function_declaration", "generator_function_declaration", "function_signature"):
        return {name or "default": _js_callable("function", node, typed)}
    if kind in ("class_declaration", "abstract_class_declaration", "class"):
        return _js_class(name or "default", node, typed)
    if kind == "interface_declaration":
        return {name: Export("interface")}
    if kind == "type_alias_declaration":
        return {name: Export("type", None, _canonical(node.child_by_field_name("value")))}
    if kind == "enum_declaration":
        return {name: Export("enum", None, _canonical(node.child_by_field_name("body")))}
    if kind in ("lexical_declaration", "variable_declaration"):
        out: dict[str, Export] = {}
        for declarator in node.named_children:
            if declarator.type != "variable_declarator":
                continue
            ident = declarator.child_by_field_name("name")
            if ident is None or ident.type != "identifier":
                continue
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                out[_text(ident)] = _js_callable("function", value, typed)
            elif value is not None and value.type == "class":
                out.update(_js_class(_text(ident), value, typed))
            else:
                annotation = _annotation(declarator.child_by_field_name("type"))
                out[_text(ident)] = Export("variable", None, annotation)
        return out
    return {}


def _js_class(name: str, node: ts.Node, typed: bool) -> dict[str, Export]:
    out = {name: Export("class")}
    body = node.child_by_field_name("body")
    for member in body.named_children if body is not None else ():
        if member.type not in (
            "method_definition",
            "method_signature",
            "abstract_method_signature",
        ):
            continue
        modifier = next(
            (c for c in member.named_children if c.type == "accessibility_modifier"), None
        )
        method = _text(member.child_by_field_name("name"))
        if _text(modifier) in ("private", "protected") or method.startswith("#"):
            continue
        key = f"{name}.{method}"
        out[key] = with_overload(out.get(key), _js_callable("method", member, typed))
    return out


def _js_callable(kind: str, node: ts.Node, typed: bool) -> Export:
    params_node = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
    params: list[str] = []
    if params_node is not None and params_node.type == "identifier":  # x => …
        params.append(_param_type(None, typed))
    for param in params_node.named_children if params_node is not None else ():
        params.append(_js_param(param, typed))
    returns = _annotation(node.child_by_field_name("return_type")) if typed else ""
    return Export(kind, tuple(params), returns)


def _js_param(param: ts.Node, typed: bool) -> str:
    kind = param.type
    pattern = param.child_by_field_name("pattern")
    annotation = param.child_by_field_name("type")
    if kind == "optional_parameter":
        return _param_type(annotation, typed) + "?"
    if kind == "required_parameter":
        typ = _param_type(annotation, typed)
        if pattern is not None and pattern.type == "rest_pattern":
            return "..." + typ
        return typ + "?" if param.child_by_field_name("value") is not None else typ
    if kind == "assignment_pattern":
        return _param_type(None, typed) + "?"
    if kind == "rest_pattern":
        return "..." + _param_type(None, typed)
    return _param_type(None, typed)


def _param_type(annotation: ts.Node | None, typed: bool) -> str:
    if not typed:
        return "_"  # plain JavaScript: only arity and optionality are visible
    return _annotation(annotation) or "any"


def _annotation(node: ts.Node | None) -> str:
    text = _canonical(node)
    return text[1:].strip() if text.startswith(":") else text


def _js_commonjs(node: ts.Node | None, out: dict[str, Export], typed: bool) -> None:
    if node is None or node.type != "assignment_expression":
        return
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    target = _text(left)
    if target == "module.exports" and right is not None and right.type == "object":
        for prop in right.named_children:
            if prop.type == "shorthand_property_identifier":
                out[_text(prop)] = Export("binding")
            elif prop.type == "pair":
                value = prop.child_by_field_name("value")
                key = _text(prop.child_by_field_name("key"))
                out[key] = (
                    _js_callable("function", value, typed)
                    if value is not None and value.type in _FUNCTION_VALUES
                    else Export("value")
                )
            elif prop.type == "method_definition":
                out[_text(prop.child_by_field_name("name"))] = _js_callable("function", prop, typed)
    elif target == "module.exports":
        out["default"] = (
            _js_callable("function", right, typed)
            if right is not None and right.type in _FUNCTION_VALUES
            else Export("value")
        )
    elif target.startswith(("exports.", "module.exports.")):
        name = target.rpartition(".")[2]
        out[name] = (
            _js_callable("function", right, typed)
            if right is not None and right.type in _FUNCTION_VALUES
            else Export("value")
        )
