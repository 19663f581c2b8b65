"""Python files through the standard `ast` module: definitions, imports, calls, base classes.

Only syntax is read here; turning names into definitions needs the whole repository and is the
linker's job (`python_resolve`). What is recorded:
- every module, class, function and method with its span (decorators included, so a changed
  decorator touches the function it decorates);
- imports as absolute dotted names (relative imports are made absolute from the file's path)
  and as bindings of the names they introduce, in the scope where the import statement is;
- calls and decorators whose callee is a plain dotted name (`f`, `mod.f`, `self.m`, `super().m`);
  a callee computed at run time (`handlers[k]()`, `get()()`) is not a name and is not recorded;
- base classes of each class, as dotted names;
- names assigned at module level, as bindings marked `ASSIGNED` (the module's attributes).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from reviews.index.model import (
    ASSIGNED,
    CALL,
    CLASS,
    FUNCTION,
    IMPORT,
    INHERIT,
    METHOD,
    MODULE,
    Binding,
    Definition,
    FileRecord,
    Reference,
    text_digest,
)

LANGUAGE = "python"


def module_qualname(path: str) -> str:
    """`pkg/sub/mod.py` → `pkg.sub.mod`; `pkg/__init__.py` → `pkg` (path-derived, see model)."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts) or path


def package_of(path: str) -> str:
    """The package relative imports in `path` start from (the module itself for __init__.py)."""
    module = module_qualname(path)
    if PurePosixPath(path).name == "__init__.py":
        return module
    return module.rpartition(".")[0]


def parse_python(path: str, text: str) -> FileRecord:
    digest = text_digest(text)
    module = module_qualname(path)
    last_line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    module_def = Definition(
        module, module.rpartition(".")[2], MODULE, path, 1, last_line, None, LANGUAGE
    )
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError) as exc:
        # The module symbol stays so the file can still join a cohort; the error counts toward
        # the repository's failure ratio (limits.MAX_FAILURE_RATIO).
        return FileRecord(
            path, LANGUAGE, digest, module, (module_def,), (), (), f"syntax error: {exc}"
        )
    collector = _Collector(path, module)
    collector.visit(tree)
    return FileRecord(
        path=path,
        language=LANGUAGE,
        digest=digest,
        module=module,
        definitions=(module_def, *collector.definitions),
        references=tuple(collector.references),
        bindings=tuple(collector.bindings),
    )


def dotted_name(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attributes on a name; `super.m` for `super().m`; else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        value = node.value
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
        ):
            return f"super.{node.attr}"
        base = dotted_name(value)
        return f"{base}.{node.attr}" if base is not None else None
    if isinstance(node, ast.Subscript):  # Generic[T], list[int] as a base class
        return dotted_name(node.value)
    return None


class _Collector(ast.NodeVisitor):
    def __init__(self, path: str, module: str) -> None:
        self.path = path
        self.module = module
        self.package = package_of(path)
        self.definitions: list[Definition] = []
        self.references: list[Reference] = []
        self.bindings: list[Binding] = []
        self._scopes: list[tuple[str, str]] = [(module, MODULE)]

    @property
    def _scope(self) -> str:
        return self._scopes[-1][0]

    def visit(self, node: ast.AST) -> None:
        handler = _HANDLERS.get(type(node))
        if handler is None:
            self.generic_visit(node)
        else:
            handler(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        # NodeVisitor's, without a method lookup by name for each of the ~1,000 nodes of a
        # 300-line module: most nodes have no handler and are only walked through.
        # Leaves (names, constants, operators, load/store contexts: half the nodes) hold
        # nothing recorded and are not entered.
        handlers, visit, leaves = _HANDLERS, self.generic_visit, _LEAVES
        for field in node._fields:
            value = getattr(node, field, None)
            for child in value if isinstance(value, list) else (value,):
                if type(child) in leaves or not isinstance(child, ast.AST):
                    continue
                handler = handlers.get(type(child))
                if handler is None:
                    visit(child)
                else:
                    handler(self, child)

    def _ref(self, kind: str, name: str, line: int, source: str | None = None) -> None:
        self.references.append(Reference(source or self._scope, kind, name, self.path, line))

    def _define(self, node: ast.AST, name: str, kind: str) -> str:
        parent = self._scope
        qualname = f"{parent}.{name}"
        decorators = getattr(node, "decorator_list", [])
        start = min([node.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined]
        end = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        self.definitions.append(
            Definition(qualname, name, kind, self.path, start, end, parent, LANGUAGE)
        )
        for decorator in decorators:
            # A bare decorator is called with the function; `@x(...)` is visited as a Call.
            if not isinstance(decorator, ast.Call):
                name_used = dotted_name(decorator)
                if name_used is not None:
                    self._ref(CALL, name_used, decorator.lineno, source=qualname)
        return qualname

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        kind = METHOD if self._scopes[-1][1] == CLASS else FUNCTION
        qualname = self._define(node, node.name, kind)
        self._scopes.append((qualname, kind))
        self.generic_visit(node)
        self._scopes.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        qualname = self._define(node, node.name, CLASS)
        for base in node.bases:
            name = dotted_name(base)
            if name is not None:
                self._ref(INHERIT, name, base.lineno, source=qualname)
        self._scopes.append((qualname, CLASS))
        self.generic_visit(node)
        self._scopes.pop()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._ref(IMPORT, alias.name, node.lineno)
            if alias.asname:
                self.bindings.append(Binding(self._scope, alias.asname, alias.name))
            else:
                # `import a.b.c` binds `a`; `a.b.c.f()` is then resolved through it.
                top = alias.name.partition(".")[0]
                self.bindings.append(Binding(self._scope, top, top))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node.module, node.level)
        if base is None:
            return
        for alias in node.names:
            if alias.name == "*":
                self._ref(IMPORT, base, node.lineno)
                self.bindings.append(Binding(self._scope, "*", base))
                continue
            target = f"{base}.{alias.name}" if base else alias.name
            self._ref(IMPORT, target, node.lineno)
            self.bindings.append(Binding(self._scope, alias.asname or alias.name, target))

    def _absolute(self, module: str | None, level: int) -> str | None:
        if level == 0:
            return module
        package = self.package.split(".") if self.package else []
        if level - 1 > len(package):
            return None  # beyond the repository's top: nothing here to resolve to
        anchor = package[: len(package) - (level - 1)]
        parts = [*anchor, *(module.split(".") if module else [])]
        return ".".join(parts) if parts else None

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._assigned(target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assigned(node.target)
        self.generic_visit(node)

    def _assigned(self, target: ast.expr) -> None:
        """A name assigned at module level (`API_SETTINGS = …`, `a, b = …`) is an attribute of
        the module another file may import: recorded so that import resolves to the module."""
        if self._scopes[-1][1] != MODULE:
            return
        if isinstance(target, ast.Name):
            self.bindings.append(Binding(self.module, target.id, self.module, ASSIGNED))
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._assigned(element.value if isinstance(element, ast.Starred) else element)

    def visit_Call(self, node: ast.Call) -> None:
        name = dotted_name(node.func)
        if name is not None:
            self._ref(CALL, name, node.lineno)
        self.generic_visit(node)


_LEAVES: frozenset[type] = frozenset(
    {ast.Name, ast.Constant, type(None), str, int}
    | {
        kind
        for family in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
        for kind in family.__subclasses__()
    }
)

_HANDLERS: dict[type[ast.AST], Callable[[_Collector, Any], None]] = {
    ast.FunctionDef: _Collector.visit_FunctionDef,
    ast.AsyncFunctionDef: _Collector.visit_AsyncFunctionDef,
    ast.ClassDef: _Collector.visit_ClassDef,
    ast.Import: _Collector.visit_Import,
    ast.ImportFrom: _Collector.visit_ImportFrom,
    ast.Assign: _Collector.visit_Assign,
    ast.AnnAssign: _Collector.visit_AnnAssign,
    ast.Call: _Collector.visit_Call,
}
