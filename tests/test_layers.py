"""The house, checked: the layer contracts hold, no module imports itself back, few imports hide
inside functions, and modules and functions stay short enough to read.

The contracts are in pyproject.toml (`[tool.importlinter]`, run by `make check` as
`lint-imports`); the lists this module enforces are next to them in `[tool.quorum.layers]`,
each entry with its reason. Every import statement counts, also one inside a function: those are
how a cycle hides. Imports under `if TYPE_CHECKING:` do not, since they never run.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

from tests import layers_doc

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("config", "reviews", "workspaces", "guardrails")
SETTINGS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["quorum"]["layers"]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _sources() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            yield module.removesuffix(".__init__"), path


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _project_imports(node: ast.AST) -> Iterator[tuple[str, int]]:
    """(imported module, line) of every project import under `node`, TYPE_CHECKING blocks
    excepted."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            continue
        if isinstance(child, ast.Import):
            for alias in child.names:
                if alias.name.split(".")[0] in PACKAGES:
                    yield alias.name, child.lineno
        elif (
            isinstance(child, ast.ImportFrom)
            and child.level == 0
            and (child.module or "").split(".")[0] in PACKAGES
        ):
            yield str(child.module), child.lineno
        yield from _project_imports(child)


def _function_level_imports() -> dict[str, list[str]]:
    """`importer -> imported` for every project import inside a function, with its lines."""
    found: dict[str, list[str]] = {}
    for module, path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for imported, line in _project_imports(node):
                    key = f"{module} -> {imported}"
                    found.setdefault(key, []).append(f"{path.relative_to(ROOT)}:{line}")
    return {key: sorted(set(lines)) for key, lines in found.items()}


def test_imports_inside_functions_are_the_listed_few() -> None:
    allowed: dict[str, str] = SETTINGS["function-imports"]
    assert len(allowed) <= 20, "at most 20 imports inside functions, each with its reason"
    assert all(reason.strip() for reason in allowed.values()), "every entry says why"
    found = _function_level_imports()
    unlisted = {key: lines for key, lines in found.items() if key not in allowed}
    assert not unlisted, (
        "imports inside functions hide cycles: import at the top of the module, or list the "
        "edge in pyproject.toml [tool.quorum.layers] function-imports with its reason:\n"
        + "\n".join(f"  {key}  ({', '.join(lines)})" for key, lines in sorted(unlisted.items()))
    )
    stale = sorted(set(allowed) - set(found))
    assert not stale, f"listed but no longer imported inside a function: {stale}"


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return components


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True, cache_dir=None)
    cycles = _cycles(graph)
    detail = []
    for component in cycles:
        members = set(component)
        edges = [
            f"    {a} -> {b}"
            for a in component
            for b in sorted(graph.find_modules_directly_imported_by(a) & members)
        ]
        detail.append(f"  {len(component)} modules:\n" + "\n".join(edges))
    assert not cycles, "import cycles (imports inside functions count):\n" + "\n".join(detail)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for a, b in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=a, imported=b)
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_modules_and_functions_stay_short() -> None:
    long_allowed: dict[str, str] = SETTINGS["long-functions"]
    assert len(long_allowed) <= 5 and all(r.strip() for r in long_allowed.values())
    too_long_modules, too_long_functions = [], {}
    for module, path in _sources():
        source = path.read_text()
        if source.count("\n") > MAX_MODULE_LINES:
            too_long_modules.append(f"{path.relative_to(ROOT)}: {source.count(chr(10))} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long_functions[f"{module}.{node.name}"] = length
    assert not too_long_modules, f"modules over {MAX_MODULE_LINES} lines: {too_long_modules}"
    unlisted = {name: n for name, n in too_long_functions.items() if name not in long_allowed}
    assert not unlisted, f"functions over {MAX_FUNCTION_LINES} lines: {unlisted}"
    stale = sorted(set(long_allowed) - set(too_long_functions))
    assert not stale, f"listed as long but no longer over {MAX_FUNCTION_LINES} lines: {stale}"


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(binary), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)},
    )


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_contracts_hold_and_fail_on_an_import_hidden_in_a_function(
    project_copy: Path,
) -> None:
    clean = _lint_imports(project_copy)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    planted = project_copy / "reviews" / "domain" / "verdict.py"
    planted.write_text(
        planted.read_text() + "\n\ndef _planted() -> object:\n"
        "    from reviews.web import review_pages\n\n    return review_pages\n"
    )
    broken = _lint_imports(project_copy)
    assert broken.returncode != 0
    assert "reviews.domain.verdict -> reviews.web.review_pages" in broken.stdout, broken.stdout


def test_the_architecture_page_draws_the_contracts() -> None:
    assert layers_doc.current() == layers_doc.render(), (
        "docs/architecture.md and the contracts in pyproject.toml disagree: "
        "run `python -m tests.layers_doc`"
    )
