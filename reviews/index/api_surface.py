"""The exported surface of TypeScript/JavaScript modules and Go packages, and its comparison.

Read with the same tree-sitter grammars as the code index. What counts as exported:
- TypeScript/JavaScript: a module is a file; its surface is what `export` declares (functions,
  classes and their non-private methods, interfaces, types, enums, variables, `export { … }`
  lists, `export * from`, the default export) and CommonJS `module.exports`/`exports.x`. Test
  files and vendored trees are nobody's API.
- Go: a package is a directory; its surface is every capitalised top-level name (functions,
  types, constants, variables), the exported methods and struct fields of exported types.
  `package main`, `_test.go` files, `internal/` and `testdata/` trees cannot be imported.

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

from reviews.index import ts_types
from reviews.index.api_java import exported_packages, java_exports, public_package
from reviews.index.api_java import package_of as java_package
from reviews.index.api_python import ApiChange
from reviews.index.api_rust import rust_surface
from reviews.index.js_packages import public_modules, read_packages
from reviews.index.limits import is_test_path, language_for, skip_reason_for_path
from reviews.index.treesitter_parse import _parser
from reviews.index.type_text import canonical as _canonical
from reviews.index.type_text import joined as _joined
from reviews.index.type_text import text_of as _text

JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
SURFACE_LANGUAGES = JS_LANGUAGES | {"go", "rust", "java"}
_GO_NOT_IMPORTABLE = frozenset({"internal", "testdata"})


@dataclass(frozen=True, slots=True)
class Export:
    """One exported name. `params`: one normalised type per parameter, `?` suffix when
    optional, `...` prefix when variadic; None for things that are not callable."""

    kind: str
    params: tuple[str, ...] | None = None
    returns: str = ""
    overloads: tuple[Export, ...] = ()  # TypeScript overload signatures, in order

    @property
    def signature(self) -> str:
        if self.overloads:
            return " & ".join(o.signature for o in self.overloads)
        if self.params is None:
            return self.returns
        tail = f" -> {self.returns}" if self.returns else ""
        return f"({', '.join(self.params)}){tail}"


#: where → export; `where` is `path:Name` (JS/TS module) or `dir:Name` (Go package).
Surface = Mapping[str, Export]


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


def with_overload(existing: Export | None, new: Export) -> Export:
    """Two declarations of one callable name are overloads: both are kept."""
    if (
        existing is None
        or (existing.params is None and not existing.overloads)
        or new.params is None
    ):
        return new
    return Export(new.kind, None, "", (*(existing.overloads or (existing,)), new))


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
        tree = _parser(language).parse(files[path].encode("utf-8", "replace"))
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
            found = _go_exports(tree.root_node, go_aliases.setdefault(owner, {}))
            if found is None:  # package main: not importable
                continue
            for name, export in found.items():
                go_surface[f"{owner}:{name}"] = export
        else:
            owner = path
            links[path] = []
            modules[path] = _js_exports(
                tree.root_node, typed=language != "javascript", links=links[path]
            )
        if path in errors:
            unsure |= _unparsed(tree.root_node, owner, language or "")
    for where, export in go_surface.items():
        surface[where] = _go_resolved(export, go_aliases.get(surface_owner(where), {}))
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
            names.update(_go_declarations([node]) or {})
        elif language != "go" and node.type == "export_statement":
            _js_export_statement(node, names, {}, typed=language != "javascript")
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


def _exported_go(name: str) -> bool:
    return name[:1].isupper()


def _go_exports(root: ts.Node, aliases: dict[str, str] | None = None) -> dict[str, Export] | None:
    """A Go file's exports; `aliases` collects the file's type aliases (`type A = B`) and named
    function types (`type F func(int) error`) by name, with what they stand for."""
    return _go_declarations(root.named_children, aliases)


def _go_declarations(
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


def _go_resolved(export: Export, aliases: Mapping[str, str]) -> Export:
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


# -- TypeScript / JavaScript -----------------------------------------------------------------

_FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")


def _js_exports(root: ts.Node, *, typed: bool, links: list[str] | None = None) -> dict[str, Export]:
    """A module's exports; `links` collects the specifiers it re-exports (what makes another
    module reachable from this one)."""
    local: dict[str, Export] = {}  # top-level declarations, for `export { a }`
    imported: dict[str, str] = {}  # local name → specifier it was imported from
    out: dict[str, Export] = {}
    links = [] if links is None else links
    for node in root.named_children:
        if node.type == "export_statement":
            _js_export_statement(node, out, local, typed=typed)
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


def _js_export_statement(
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


__all__ = [
    "Export",
    "Surface",
    "SurfaceReport",
    "compare_exported",
    "compare_surfaces",
    "exported_surface",
    "surface_file",
]
