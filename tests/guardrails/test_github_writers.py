"""Every action class that writes to GitHub says so, read from the code (issue 37, item 3).

The audit trail's "Who published what" lists the executions of the action classes marked
`writes_to_github` (guardrails.actions.github_write_actions). A flag is only as good as the
person who sets it, so this test reads the code instead of trusting it:

- a *GitHub write* is a method of the GitHub client that sends a POST, PATCH, PUT or DELETE
  to a repository (`_repo_call` with that verb): creating a review, an issue, a reply, a
  comment, a check run, a commit status, and whatever is added there later;
- a name-based call graph of the product's modules (functions, the imports inside and outside
  them, and `module.function` references) says which action class's executor reaches one.

An action class must be marked exactly when its executor reaches a GitHub write, and every
place that writes to GitHub must be reached from a marked class — so a new GitHub-writing
class left unmarked, a marked class that writes nothing, and a write to GitHub made outside any
action class (which "Who published what" could never show) all fail here.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

from guardrails.actions import REGISTRY, ActionClass, github_write_actions

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "guardrails", "reviews", "workspaces")
CLIENT = "reviews.sources.github_client"
WRITE_VERBS = {"POST", "PATCH", "PUT", "DELETE"}

Function = tuple[str, str]  # (module, top-level function or Class.method)


def _modules() -> dict[str, ast.Module]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts or "tests" in parts:
                continue
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[module] = ast.parse(path.read_text(), filename=str(path))
    return found


MODULES = _modules()


def _write_methods() -> set[str]:
    """The GitHub client's methods that change something in a repository."""
    methods = set()
    for cls in (n for n in MODULES[CLIENT].body if isinstance(n, ast.ClassDef)):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                verb = call.args[0] if call.args else None
                if (
                    isinstance(call.func, ast.Attribute)
                    and call.func.attr == "_repo_call"
                    and isinstance(verb, ast.Constant)
                    and verb.value in WRITE_VERBS
                ):
                    methods.add(fn.name)
    return methods


WRITES = _write_methods()


def _definitions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Top-level functions and methods; a nested function belongs to the one around it."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{node.name}.{item.name}", item


def _package_of(module: str) -> str:
    tree_is_package = (ROOT / module.replace(".", "/") / "__init__.py").exists()
    return module if tree_is_package else module.rpartition(".")[0]


def _imports(module: str, tree: ast.Module) -> dict[str, str]:
    """Local name → dotted path it stands for, from every import in the module (inside
    functions too: the services import each other there)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package_of(module)
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


FUNCTIONS: dict[Function, ast.AST] = {
    (module, name): node for module, tree in MODULES.items() for name, node in _definitions(tree)
}
IMPORTS = {module: _imports(module, tree) for module, tree in MODULES.items()}


def _resolve(path: str, depth: int = 0) -> Function | None:
    """`reviews.services.notes.ticket_issue_execute` → its definition, when it is one."""
    module, _, name = path.rpartition(".")
    if (module, name) in FUNCTIONS:
        return (module, name)
    # A name re-exported by a package's __init__ (workspaces.services.budgets_update).
    target = IMPORTS.get(module, {}).get(name)
    if target and target != path and depth < 5:
        return _resolve(target, depth + 1)
    return None


def _graph() -> tuple[dict[Function, set[Function]], set[Function]]:
    """Who refers to whom, and which functions use a GitHub write method themselves."""
    edges: dict[Function, set[Function]] = defaultdict(set)
    writers: set[Function] = set()
    for module, tree in MODULES.items():
        imports = IMPORTS[module]
        for name, node in _definitions(tree):
            here = (module, name)
            for inner in ast.walk(node):
                if isinstance(inner, ast.Attribute) and inner.attr in WRITES and module != CLIENT:
                    writers.add(here)
                path = None
                if isinstance(inner, ast.Name | ast.Attribute):
                    dotted = _dotted(inner)
                    if dotted:
                        head, _, rest = dotted.partition(".")
                        if head in imports:
                            path = imports[head] + (f".{rest}" if rest else "")
                        elif (module, head) in FUNCTIONS and not rest:
                            path = f"{module}.{head}"
                if path and (target := _resolve(path)) is not None and target != here:
                    edges[here].add(target)
    return edges, writers


EDGES, WRITERS = _graph()


def _reach(start: Function) -> set[Function]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in EDGES[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _executor(spec: ActionClass) -> Function:
    fn: Callable = spec.execute
    found = (fn.__module__, fn.__qualname__)
    assert found in FUNCTIONS, f"{spec.name}: cannot find its executor {found}"
    return found


def test_the_code_knows_what_writes_to_github() -> None:
    """The analysis itself sees today's writes, or the other tests would prove nothing."""
    assert {
        "create_review",
        "create_issue",
        "reply_to_review_comment",
        "create_issue_comment",
        "create_check_run",
        "update_check_run",
        "create_commit_status",
    } <= WRITES
    assert {"get_pull", "find_check_runs", "list_review_comments"}.isdisjoint(WRITES)
    assert ("reviews.services.publishing", "publish_review") in WRITERS or any(
        m == "reviews.services.publishing" for m, _ in WRITERS
    )
    assert ("reviews.services.check_runs", "_post") in WRITERS


def test_an_action_class_writes_to_github_exactly_when_it_says_so() -> None:
    wrong = {
        spec.name: spec.writes_to_github
        for spec in REGISTRY.values()
        if bool(_reach(_executor(spec)) & WRITERS) != spec.writes_to_github
    }
    assert not wrong, (
        "writes_to_github disagrees with what the executor does (name → flag as set): "
        f"{wrong}; a class whose executor writes to GitHub must say so, or 'Who published "
        "what' in the audit trail leaves its executions out"
    )


def test_every_write_to_github_is_made_by_an_action_class_that_says_so() -> None:
    reached = set().union(*(_reach(_executor(s)) for s in REGISTRY.values() if s.writes_to_github))
    outside = sorted(f"{m}.{f}" for m, f in WRITERS - reached)
    assert not outside, (
        f"these write to GitHub outside any action class marked writes_to_github: {outside}; "
        "put the write behind an action class (registered in guardrails.actions) so it is "
        "audited and listed under 'Who published what'"
    )


def test_who_published_what_is_read_from_the_registry() -> None:
    assert github_write_actions() == [
        "prPublish.executed",
        "issueCreate.executed",
        "threadAnswer.executed",
        "checkRun.executed",
    ]
