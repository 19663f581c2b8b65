"""docs/contributing.md's "Adding an analyzer" and "Adding an axis", followed on the running code.

Each recipe's backticked module paths must exist and each backticked Python name must be
found in a module the recipe cites; then a tiny analyzer and two tiny axes are registered the
way the recipe says (for the test only: the tables are restored afterwards) and run the way
the recipe says they run.
"""

from __future__ import annotations

import enum
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from reviews.agents import analyzers, offline
from reviews.domain import axes
from reviews.domain.types import (
    AxisResult,
    Category,
    Dimension,
    NodeType,
    NodeView,
    Priority,
    VerdictLevel,
)
from reviews.sources.diffs import ChangedFile, parse_unified_diff
from tests.fakes.gitrepo import GitRepo

ROOT = Path(__file__).resolve().parent.parent
CONTRIBUTING = ROOT / "docs" / "contributing.md"

#: Backticked words of the recipes that are not Python names of the project: tool and field
#: names a model or an API sees, and the recipe's own placeholders.
NOT_PYTHON_NAMES = {"add_review_node", "details", "pass", "unavailable", "to_clear"}


def recipe(title: str) -> str:
    text = CONTRIBUTING.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def cited(section: str) -> tuple[list[str], list[str]]:
    """(module paths, Python names) the section writes in backticks."""
    words = re.findall(r"`([^`\n]+)`", section)
    paths = [w for w in words if w.endswith(".py")]
    names = [w for w in words if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", w)]
    return paths, [n for n in names if n not in NOT_PYTHON_NAMES]


def module_of(path: str) -> ModuleType:
    return importlib.import_module(path.removesuffix(".py").replace("/", "."))


def check_cited(title: str) -> dict[str, ModuleType]:
    """Every cited path exists and every cited name is in a cited module (`module.name`: in the
    module of that name). Returns the cited project modules by their last name."""
    paths, names = cited(recipe(title))
    missing = [p for p in paths if not (ROOT / p).is_file()]
    assert not missing, f"{title}: cited files that do not exist: {missing}"
    modules = {
        p.removesuffix(".py").rsplit("/", 1)[-1]: module_of(p)
        for p in paths
        if p.startswith(("reviews/", "workspaces/"))
    }
    unknown = []
    for name in names:
        owner, _, attr = name.rpartition(".")
        candidates = [modules[owner]] if owner in modules else list(modules.values())
        if not any(hasattr(m, attr) for m in candidates):
            unknown.append(name)
    assert not unknown, f"{title}: names no cited module defines: {unknown}"
    return modules


# -- Adding an analyzer ------------------------------------------------------------------------

BASE = "def greet(name):\n    return 'hello ' + name\n"
HEAD = "def greet(name):\n    # TODO: say it in the user's language\n    return 'hello ' + name\n"


@pytest.fixture
def change(tmp_path: Path) -> tuple[Path, list[ChangedFile]]:
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"greet.py": BASE})
    head = repo.commit("head", {"greet.py": HEAD})
    return repo.path, parse_unified_diff(repo.git("diff", base, head))


def run_todo(worktree: Path | str, changed_files: list[ChangedFile]) -> analyzers.AnalyzerResult:
    """A tiny analyzer: a `TODO` on an added line is a finding."""
    root = Path(worktree)
    found: list[analyzers.AnalyzerFinding] = []
    for path, lines in analyzers.added_lines(changed_files).items():
        text = (root / path).read_text().splitlines()
        for line in sorted(lines):
            if "TODO" in text[line - 1]:
                payload = analyzers.finding_payload(
                    reasoning="A TODO added by the change is work left undone.",
                    node_type=NodeType.SUGGESTION,
                    priority=Priority.P3,
                    category=Category.MAINTAINABILITY,
                    path=path,
                    lines=(line, line),
                    confidence=0.9,
                    title="TODO1: a TODO is added",
                    body="The change adds a TODO.",
                )
                found.append(analyzers.AnalyzerFinding(payload, {"tool": "todo", "rule": "TODO1"}))
    files = sorted(analyzers.added_lines(changed_files))
    return analyzers.validated_result("todo", TODO.dimensions, found, root, files)


TODO = analyzers.AnalyzerReviewer(
    name="todo",
    dimensions=frozenset({Dimension.QUALITY}),
    axes=frozenset(),
    run=run_todo,
)


@pytest.fixture
def todo_registered() -> Iterator[None]:
    """Step 2 of the recipe: the one analyzer table, with its scope; restored afterwards."""
    offline.ANALYZERS["todo"] = TODO
    offline.ANALYZER_SCOPES["todo"] = "TODO comments"
    try:
        yield
    finally:
        del offline.ANALYZERS["todo"]
        del offline.ANALYZER_SCOPES["todo"]


def test_the_analyzer_recipe_cites_names_that_exist() -> None:
    modules = check_cited("Adding an analyzer")
    assert modules["offline"] is offline and modules["analyzers"] is analyzers


def test_an_analyzer_registered_as_the_recipe_says_runs_over_a_change(
    change: tuple[Path, list[ChangedFile]], todo_registered: None
) -> None:
    root, files = change
    results = {result.reviewer: result for result in offline.run_all(root, files)}
    todo = results["todo"]
    assert todo.ok and not todo.rejected
    assert [(p["title"], p["anchor"]["start_line"]) for p in todo.payloads] == [
        ("TODO1: a TODO is added", 2)
    ]
    # The pipeline's stream runner reads the same table.
    from reviews.pipeline import analyzer_runs

    assert analyzer_runs.ANALYZERS is offline.ANALYZERS


def test_the_analyzer_table_is_restored() -> None:
    assert "todo" not in offline.ANALYZERS and "todo" not in offline.ANALYZER_SCOPES


# -- Adding an axis ----------------------------------------------------------------------------


class NewAxis(enum.StrEnum):
    """Stand-ins for step 1's new `AxisName` members (an enum cannot grow in a test)."""

    LATENCY = "latency"
    DOCS = "docs"


@pytest.fixture
def axes_registered() -> Iterator[None]:
    """Step 1: a deterministic axis and a token axis, each in its one table; restored after."""
    axes.DETERMINISTIC_AXES[NewAxis.LATENCY] = "no latency result was submitted for this round"
    axes.TOKEN_AXES[NewAxis.DOCS] = axes.TokenAxis(
        dimensions=frozenset({Dimension.QUALITY}),
        categories=frozenset({Category.DOCUMENTATION}),
    )
    try:
        yield
    finally:
        del axes.DETERMINISTIC_AXES[NewAxis.LATENCY]
        del axes.TOKEN_AXES[NewAxis.DOCS]


def test_the_axis_recipe_cites_names_that_exist() -> None:
    modules = check_cited("Adding an axis")
    assert modules["axes"] is axes


def test_a_deterministic_axis_registered_as_the_recipe_says_is_recorded_and_gates(
    axes_registered: None,
) -> None:
    recorded = {
        axis: (result, details)
        for axis, result, details in axes.deterministic_axes(submitted=set(), fast_exit=False)
    }
    result, details = recorded[NewAxis.LATENCY]
    assert result is AxisResult.UNAVAILABLE
    assert details["reason"] == "no latency result was submitted for this round"
    assert {"submit", "ungate"} <= {step["action"] for step in details["to_clear"]}
    # Submitted, it is not recorded a second time.
    again = axes.deterministic_axes(submitted={"latency"}, fast_exit=False)
    assert NewAxis.LATENCY not in [axis for axis, _, _ in again]
    # Gated and unavailable, it holds the verdict.
    assert axes.gating_axes([NewAxis.LATENCY]) == {NewAxis.LATENCY}
    floor = axes.axis_floor({}, gated=[NewAxis.LATENCY])
    assert floor is not None and floor.level is VerdictLevel.HOLD


def test_a_token_axis_registered_as_the_recipe_says_reads_the_findings(
    axes_registered: None,
) -> None:
    finding = NodeView(
        id="n1",
        agent="quality",
        type=NodeType.SUGGESTION,
        priority=Priority.P3,
        confidence=0.8,
        category=Category.DOCUMENTATION,
    )
    results = axes.token_axes(coverage={Dimension.QUALITY: "docs"}, nodes=[finding])
    assert results[NewAxis.DOCS] is AxisResult.WARN
    assert axes.token_axes(coverage={}, nodes=[])[NewAxis.DOCS] is AxisResult.UNAVAILABLE
    # A token axis never gates.
    assert axes.gating_axes([NewAxis.DOCS]) == frozenset()


def test_the_axis_tables_are_restored() -> None:
    assert NewAxis.LATENCY not in axes.DETERMINISTIC_AXES
    assert NewAxis.DOCS not in axes.TOKEN_AXES
