"""JavaScript/TypeScript, Go, Java and Rust through tree-sitter: definitions, imports, calls.

Each grammar comes from its own wheel (`tree_sitter_go.language()` …), compiled in, so nothing is
downloaded at run time. This is best effort and name-based: calls are recorded as the name they
are written with (`f`, `pkg.F`, `self.m`; `this.m`, a Go receiver and Rust `self` are all written
`self.m`), and `named_resolve` matches names to definitions. Trees with syntax errors are still
used (tree-sitter recovers), but the file is marked failed so the repository's failure ratio
reflects it.
"""

from __future__ import annotations

from collections.abc import Callable

import tree_sitter as ts

from reviews.index.model import (
    ASSIGNED,
    CALL,
    CLASS,
    FUNCTION,
    IMPORT,
    INHERIT,
    INTERFACE,
    JAVA_PACKAGE,
    MACRO,
    METHOD,
    MOD,
    MOD_DIR,
    MODULE,
    Binding,
    Definition,
    FileRecord,
    Reference,
    text_digest,
)
from reviews.index.rust_paths import mod_paths, rust_callee
from reviews.index.treesitter_grammars import parser as _parser


def parse_with_treesitter(path: str, text: str, language: str) -> FileRecord:
    source = text.encode("utf-8", "replace")
    digest = text_digest(text)
    tree = _parser(language).parse(source)
    walker = _Walker(path, language)
    walker.walk(tree.root_node)
    last_line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    module_def = Definition(
        path, path.rpartition("/")[2], MODULE, path, 1, last_line, None, language
    )
    error = "syntax errors (tree-sitter recovered)" if tree.root_node.has_error else None
    return FileRecord(
        path=path,
        language=language,
        digest=digest,
        module=path,
        definitions=(module_def, *walker.definitions),
        references=tuple(walker.references),
        bindings=tuple(walker.bindings),
        error=error,
    )


def _text(node: ts.Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _string_value(node: ts.Node | None) -> str:
    """The contents of a string literal node, without its quotes."""
    raw = _text(node)
    return raw[1:-1] if len(raw) >= 2 and raw[0] in "\"'`" and raw[-1] == raw[0] else raw


def _type_name(node: ts.Node | None) -> str:
    """`Foo` from `Foo`, `*Foo`, `Foo<T>`, `pkg.Foo`, `List<Foo>` → its head type's name."""
    while node is not None and node.type in (
        "pointer_type",
        "generic_type",
        "reference_type",
        "type_arguments",
    ):
        inner = node.child_by_field_name("type") or node.child_by_field_name("name")
        if inner is None:
            inner = node.named_children[0] if node.named_children else None
        node = inner
    if node is None:
        return ""
    return _text(node).replace("::", ".")


class _Walker:
    """Walks one tree with an explicit stack (deep expressions would overflow recursion)."""

    def __init__(self, path: str, language: str) -> None:
        self.path = path
        self.language = language
        self.family = "js" if language in ("javascript", "typescript", "tsx") else language
        self.definitions: list[Definition] = []
        self.references: list[Reference] = []
        self.bindings: list[Binding] = []
        self._known: set[str] = {path}
        self._handlers: dict[str, Callable[[ts.Node, _Scope], _Scope | None]] = {
            "js": self._js,
            "go": self._go,
            "java": self._java,
            "rust": self._rust,
        }

    def walk(self, root: ts.Node) -> None:
        handler = self._handlers[self.family]
        stack: list[tuple[ts.Node, _Scope]] = [(root, _Scope(self.path, None, None))]
        while stack:
            node, scope = stack.pop()
            inner = handler(node, scope) or scope
            stack.extend((child, inner) for child in reversed(node.named_children))

    # -- recording ---------------------------------------------------------------------------

    def _define(
        self, node: ts.Node, name: str, kind: str, scope: _Scope, *, owner: str | None = None
    ) -> _Scope:
        """Record a definition; `owner` names the class a method belongs to when the method is
        declared outside it (Go receivers, Rust impl blocks)."""
        prefix = scope.local
        if owner is not None:
            prefix = owner
        local = f"{prefix}.{name}" if prefix else name
        qualname = f"{self.path}:{local}"
        parent = scope.qualname
        if owner is not None:
            owner_qual = f"{self.path}:{owner}"
            parent = owner_qual if owner_qual in self._known else self.path
        self._known.add(qualname)
        self.definitions.append(
            Definition(
                qualname,
                name,
                kind,
                self.path,
                node.start_point.row + 1,
                node.end_point.row + 1,
                parent,
                self.language,
            )
        )
        return _Scope(qualname, local, kind)

    def _ref(self, kind: str, name: str, node: ts.Node, scope: _Scope) -> None:
        if name:
            self.references.append(
                Reference(scope.qualname, kind, name, self.path, node.start_point.row + 1)
            )

    def _bind(self, local: str, target: str, imported: str | None) -> None:
        if local and target:
            self.bindings.append(Binding(self.path, local, target, imported))

    # -- JavaScript / TypeScript -------------------------------------------------------------

    def _js(self, node: ts.Node, scope: _Scope) -> _Scope | None:
        kind = node.type
        if kind in ("function_declaration", "generator_function_declaration"):
            name = node.child_by_field_name("name")
            return self._define(node, _text(name), FUNCTION, scope) if name else None
        if kind in ("class_declaration", "abstract_class_declaration", "class"):
            name = node.child_by_field_name("name")
            if name is None:
                return None
            inner = self._define(node, _text(name), CLASS, scope)
            for child in node.named_children:
                if child.type == "class_heritage":
                    self._js_heritage(child, inner)
            return inner
        if kind in ("interface_declaration", "type_alias_declaration"):
            inner = self._define(node, _text(node.child_by_field_name("name")), INTERFACE, scope)
            for child in node.named_children:
                if child.type == "extends_type_clause":
                    for base in child.named_children:
                        self._ref(INHERIT, _type_name(base), base, inner)
            return inner
        if kind == "enum_declaration":
            return self._define(node, _text(node.child_by_field_name("name")), CLASS, scope)
        if kind in ("method_definition", "method_signature", "abstract_method_signature"):
            return self._define(node, _text(node.child_by_field_name("name")), METHOD, scope)
        if kind in ("variable_declarator", "public_field_definition", "field_definition"):
            return self._js_declarator(node, scope)
        if kind == "import_statement":
            self._js_import(node, scope)
            return None
        if kind == "export_statement" and node.child_by_field_name("source") is not None:
            self._js_reexport(node, scope)
            return None
        if kind == "call_expression":
            self._js_call(node, scope)
        elif kind == "new_expression":
            self._ref(CALL, self._js_callee(node.child_by_field_name("constructor")), node, scope)
        elif kind in ("jsx_opening_element", "jsx_self_closing_element"):
            # <Widget/> renders a component: as good as a call for the graph.
            tag = _text(node.child_by_field_name("name"))
            if tag[:1].isupper():
                self._ref(CALL, tag, node, scope)
        return None

    def _js_heritage(self, heritage: ts.Node, scope: _Scope) -> None:
        for child in heritage.named_children:
            if child.type == "extends_clause":
                value = child.child_by_field_name("value")
                self._ref(INHERIT, self._js_callee(value), child, scope)
            elif child.type == "implements_clause":
                for base in child.named_children:
                    self._ref(INHERIT, _type_name(base), base, scope)
            else:  # JavaScript's grammar: `extends <expression>` directly
                self._ref(INHERIT, self._js_callee(child), child, scope)

    def _js_declarator(self, node: ts.Node, scope: _Scope) -> _Scope | None:
        name = node.child_by_field_name("name") or node.child_by_field_name("property")
        value = node.child_by_field_name("value")
        if name is None or value is None:
            return None
        if value.type in (
            "arrow_function",
            "function_expression",
            "function",
            "generator_function",
        ):
            kind = METHOD if node.type != "variable_declarator" else FUNCTION
            return self._define(node, _text(name), kind, scope)
        if value.type == "class":
            return self._define(node, _text(name), CLASS, scope)
        if value.type == "call_expression" and _text(value.child_by_field_name("function")) == (
            "require"
        ):
            spec = self._require_spec(value)
            if spec and name.type == "identifier":
                self._bind(_text(name), spec, None)
            elif spec and name.type == "object_pattern":
                for prop in name.named_children:
                    if prop.type == "shorthand_property_identifier_pattern":
                        self._bind(_text(prop), spec, _text(prop))
        return None

    def _js_import(self, node: ts.Node, scope: _Scope) -> None:
        spec = _string_value(node.child_by_field_name("source"))
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        if clause is None:
            self._ref(IMPORT, spec, node, scope)
            return
        for part in clause.named_children:
            if part.type == "identifier":  # default import
                self._bind(_text(part), spec, None)
                self._ref(IMPORT, spec, node, scope)
            elif part.type == "namespace_import":
                local = next((c for c in part.named_children if c.type == "identifier"), None)
                self._bind(_text(local), spec, None)
                self._ref(IMPORT, spec, node, scope)
            elif part.type == "named_imports":
                for spec_node in part.named_children:
                    if spec_node.type != "import_specifier":
                        continue
                    imported = _text(spec_node.child_by_field_name("name"))
                    alias = spec_node.child_by_field_name("alias")
                    self._bind(_text(alias) if alias else imported, spec, imported)
                    self._ref(IMPORT, f"{spec}#{imported}", node, scope)

    def _js_reexport(self, node: ts.Node, scope: _Scope) -> None:
        """`export * from './x'` (local `*`), `export * as ns from`, `export {a as b} from`:
        recorded as bindings so an import through a barrel file reaches the definition."""
        spec = _string_value(node.child_by_field_name("source"))
        clause = next((c for c in node.named_children if c.type == "export_clause"), None)
        namespace = next((c for c in node.named_children if c.type == "namespace_export"), None)
        if clause is not None:
            for item in clause.named_children:
                if item.type != "export_specifier":
                    continue
                imported = _text(item.child_by_field_name("name"))
                alias = item.child_by_field_name("alias")
                self._bind(_text(alias) if alias else imported, spec, imported)
                self._ref(IMPORT, f"{spec}#{imported}", node, scope)
            return
        if namespace is not None:
            local = next((c for c in namespace.named_children if c.type == "identifier"), None)
            self._bind(_text(local), spec, None)
        else:
            self._bind("*", spec, "*")
        self._ref(IMPORT, spec, node, scope)

    def _require_spec(self, call: ts.Node) -> str:
        args = call.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        return _string_value(first) if first is not None and first.type == "string" else ""

    def _js_call(self, node: ts.Node, scope: _Scope) -> None:
        function = node.child_by_field_name("function")
        if function is None:
            return
        if function.type == "import" or _text(function) == "require":
            spec = self._require_spec(node)
            if spec:
                self._ref(IMPORT, spec, node, scope)
            return
        self._ref(CALL, self._js_callee(function), node, scope)

    def _js_callee(self, node: ts.Node | None) -> str:
        if node is None:
            return ""
        if node.type in ("identifier", "type_identifier"):
            return _text(node)
        if node.type == "member_expression":
            obj = node.child_by_field_name("object")
            prop = _text(node.child_by_field_name("property"))
            if obj is None:
                return ""
            if obj.type == "this":
                return f"self.{prop}"
            if obj.type == "super":
                return f"super.{prop}"
            if obj.type == "identifier":
                return f"{_text(obj)}.{prop}"
            # `t.context.client.send()`: the receiver is unknowable without types; the method's
            # name alone still lets a test be linked to the changed method it exercises.
            return f"?.{prop}" if prop else ""
        return ""

    # -- Go ----------------------------------------------------------------------------------

    def _go(self, node: ts.Node, scope: _Scope) -> _Scope | None:
        kind = node.type
        if kind == "function_declaration":
            return self._define(node, _text(node.child_by_field_name("name")), FUNCTION, scope)
        if kind == "method_declaration":
            receiver = node.child_by_field_name("receiver")
            param = receiver.named_children[0] if receiver and receiver.named_children else None
            owner = _type_name(param.child_by_field_name("type")) if param else ""
            name = _text(node.child_by_field_name("name"))
            inner = self._define(node, name, METHOD, scope, owner=owner or None)
            recv_name = param.child_by_field_name("name") if param else None
            return _Scope(inner.qualname, inner.local, METHOD, receiver=_text(recv_name) or None)
        if kind in ("type_spec", "type_alias"):
            body = node.child_by_field_name("type")
            def_kind = INTERFACE if body is not None and body.type == "interface_type" else CLASS
            inner = self._define(node, _text(node.child_by_field_name("name")), def_kind, scope)
            for embedded in self._go_embedded(body):
                self._ref(INHERIT, _type_name(embedded), embedded, inner)
            return inner
        if kind == "import_spec":
            spec = _string_value(node.child_by_field_name("path"))
            alias = _text(node.child_by_field_name("name"))
            segments = [s for s in spec.split("/") if s]
            last = segments[-1] if segments else spec
            if len(segments) > 1 and last[:1] == "v" and last[1:].isdigit():
                last = segments[-2]  # example.com/m/v2 is package m
            if alias not in ("_", "."):
                self._bind(alias or last, spec, None)
            self._ref(IMPORT, spec, node, scope)
            return None
        if kind == "call_expression":
            self._ref(
                CALL, self._go_callee(node.child_by_field_name("function"), scope), node, scope
            )
        elif kind == "composite_literal":
            self._ref(CALL, self._go_callee(node.child_by_field_name("type"), scope), node, scope)
        return None

    @staticmethod
    def _go_embedded(body: ts.Node | None) -> list[ts.Node]:
        """Types embedded in a struct (a field without a name) or an interface: their methods
        are promoted, so the index treats them as bases."""
        if body is None:
            return []
        if body.type == "struct_type":
            fields = next(
                (c for c in body.named_children if c.type == "field_declaration_list"), None
            )
            return [
                t
                for f in (fields.named_children if fields is not None else [])
                if f.type == "field_declaration"
                and f.child_by_field_name("name") is None
                and (t := f.child_by_field_name("type")) is not None
            ]
        if body.type == "interface_type":
            return [
                t for e in body.named_children if e.type == "type_elem" for t in e.named_children
            ]
        return []

    def _go_callee(self, node: ts.Node | None, scope: _Scope) -> str:
        if node is None:
            return ""
        if node.type in ("identifier", "type_identifier"):
            return _text(node)
        if node.type in ("selector_expression", "qualified_type"):
            operand = node.child_by_field_name("operand") or node.child_by_field_name("package")
            field = node.child_by_field_name("field") or node.child_by_field_name("name")
            if operand is None or operand.type not in ("identifier", "package_identifier"):
                return ""
            head = _text(operand)
            if scope.receiver is not None and head == scope.receiver:
                head = "self"
            return f"{head}.{_text(field)}"
        return ""

    # -- Java --------------------------------------------------------------------------------

    def _java(self, node: ts.Node, scope: _Scope) -> _Scope | None:
        kind = node.type
        if kind in ("class_declaration", "enum_declaration", "record_declaration"):
            inner = self._define(node, _text(node.child_by_field_name("name")), CLASS, scope)
            superclass = node.child_by_field_name("superclass")
            if superclass is not None and superclass.named_children:
                base = superclass.named_children[0]
                self._ref(INHERIT, _type_name(base), base, inner)
            self._java_type_list(node.child_by_field_name("interfaces"), inner)
            return inner
        if kind in ("interface_declaration", "annotation_type_declaration"):
            inner = self._define(node, _text(node.child_by_field_name("name")), INTERFACE, scope)
            for child in node.named_children:
                if child.type == "extends_interfaces":
                    self._java_type_list(child, inner)
            return inner
        if kind in ("method_declaration", "constructor_declaration"):
            return self._define(node, _text(node.child_by_field_name("name")), METHOD, scope)
        if kind == "package_declaration":
            declared = next(
                (c for c in node.named_children if c.type in ("scoped_identifier", "identifier")),
                None,
            )
            self._bind(JAVA_PACKAGE, _text(declared), None)
            return None
        if kind == "import_declaration":
            target = next(
                (c for c in node.named_children if c.type in ("scoped_identifier", "identifier")),
                None,
            )
            full = _text(target)
            wildcard = any(c.type == "asterisk" for c in node.named_children)
            self._bind("*" if wildcard else full.rpartition(".")[2], full, None)
            self._ref(IMPORT, full, node, scope)
            return None
        if kind == "method_invocation":
            name = _text(node.child_by_field_name("name"))
            obj = node.child_by_field_name("object")
            if obj is None:
                self._ref(CALL, name, node, scope)
            elif obj.type == "this":
                self._ref(CALL, f"self.{name}", node, scope)
            elif obj.type == "super":
                self._ref(CALL, f"super.{name}", node, scope)
            elif obj.type == "identifier":
                self._ref(CALL, f"{_text(obj)}.{name}", node, scope)
        elif kind == "object_creation_expression":
            self._ref(CALL, _type_name(node.child_by_field_name("type")), node, scope)
        elif kind == "field_access":
            # `Type.CONSTANT` uses the type (resolved like a bare name: an import, the package);
            # `local.field` stays unresolved.
            obj = node.child_by_field_name("object")
            if obj is not None and obj.type == "identifier":
                self._ref(CALL, _text(obj), node, scope)
        return None

    def _java_type_list(self, holder: ts.Node | None, scope: _Scope) -> None:
        if holder is None:
            return
        for child in holder.named_children:
            bases = child.named_children if child.type == "type_list" else [child]
            for base in bases:
                self._ref(INHERIT, _type_name(base), base, scope)

    # -- Rust --------------------------------------------------------------------------------

    def _rust(self, node: ts.Node, scope: _Scope) -> _Scope | None:
        kind = node.type
        if kind in ("function_item", "function_signature_item"):
            in_type = scope.kind in (CLASS, INTERFACE) or scope.impl_of is not None
            def_kind = METHOD if in_type else FUNCTION
            name = _text(node.child_by_field_name("name"))
            return self._define(node, name, def_kind, scope, owner=scope.impl_of)
        if kind in ("struct_item", "enum_item", "union_item"):
            return self._define(node, _text(node.child_by_field_name("name")), CLASS, scope)
        if kind == "trait_item":
            return self._define(node, _text(node.child_by_field_name("name")), INTERFACE, scope)
        if kind == "mod_item":
            self._rust_mod(node, scope)
            if node.child_by_field_name("body") is not None:
                return self._define(node, _text(node.child_by_field_name("name")), MODULE, scope)
        if kind == "impl_item":
            owner = _type_name(node.child_by_field_name("type"))
            prefix = f"{scope.local}.{owner}" if scope.local else owner
            trait = node.child_by_field_name("trait")
            owner_qual = f"{self.path}:{prefix}"
            source = _Scope(owner_qual if owner_qual in self._known else scope.qualname, None, None)
            if trait is not None:
                self._ref(INHERIT, _type_name(trait), trait, source)
            return _Scope(scope.qualname, scope.local, scope.kind, impl_of=prefix)
        if kind == "use_declaration":
            self._rust_use(node.child_by_field_name("argument"), "", node, scope)
            return None
        if kind in ("type_item", "const_item", "static_item", "macro_definition"):
            # A type alias, a constant or a macro another module may `use`: the name is the
            # module's, as a Python module's assigned names are (model.ASSIGNED).
            if scope.kind in (None, MODULE):  # the file's top level, or an inline `mod`
                marker = MACRO if kind == "macro_definition" else ASSIGNED
                self._bind(_text(node.child_by_field_name("name")), self.path, marker)
            return None
        if kind == "call_expression":
            self._ref(CALL, rust_callee(node.child_by_field_name("function")), node, scope)
        return None

    def _rust_mod(self, node: ts.Node, scope: _Scope) -> None:
        """A module of the crate's tree (not one in a function), with its `#[path]`s."""
        if scope.kind in (None, MODULE):
            inline = node.child_by_field_name("body") is not None
            name, marker = _text(node.child_by_field_name("name")), MOD_DIR if inline else MOD
            for target in mod_paths(node, inline=inline):
                self.bindings.append(Binding(scope.qualname, name, target, marker))

    def _rust_use(self, node: ts.Node | None, prefix: str, stmt: ts.Node, scope: _Scope) -> None:
        if node is None:
            return
        join = lambda rest: f"{prefix}::{rest}" if prefix else rest  # noqa: E731
        if node.type in ("scoped_identifier", "identifier", "crate", "self", "super"):
            full = join(_text(node))
            self._bind(full.rpartition("::")[2], full, None)
            self._ref(IMPORT, full, stmt, scope)
        elif node.type == "use_as_clause":
            full = join(_text(node.child_by_field_name("path")))
            self._bind(_text(node.child_by_field_name("alias")), full, None)
            self._ref(IMPORT, full, stmt, scope)
        elif node.type == "scoped_use_list":
            inner_prefix = join(_text(node.child_by_field_name("path")))
            self._rust_use(node.child_by_field_name("list"), inner_prefix, stmt, scope)
        elif node.type == "use_list":
            for child in node.named_children:
                self._rust_use(child, prefix, stmt, scope)
        elif node.type == "use_wildcard":
            path_node = node.named_children[0] if node.named_children else None
            full = join(_text(path_node)) if path_node is not None else prefix
            self._bind("*", full, None)
            self._ref(IMPORT, full, stmt, scope)


class _Scope:
    """Where the walker is: the enclosing definition, and what `self`/a receiver refers to."""

    __slots__ = ("impl_of", "kind", "local", "qualname", "receiver")

    def __init__(
        self,
        qualname: str,
        local: str | None,
        kind: str | None,
        *,
        receiver: str | None = None,
        impl_of: str | None = None,
    ) -> None:
        self.qualname = qualname
        self.local = local  # the part after "path:", None at file level
        self.kind = kind
        self.receiver = receiver  # Go: the receiver variable, written `self` in references
        self.impl_of = impl_of  # Rust: the type an impl block adds methods to
