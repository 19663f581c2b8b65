"""Offline analyzers: real ruff and bandit runs, reported only on lines the change adds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reviews.agents.analyzers import AnalyzerResult, added_lines
from reviews.agents.bandit_analyzer import BANDIT, bandit_mapping, run_bandit
from reviews.agents.offline import dimensions_covered, run_all
from reviews.agents.ruff_analyzer import RUFF, ruff_mapping, run_ruff
from reviews.domain.nodes import Accepted, parse_node_payload
from reviews.domain.types import Category, Dimension, NodeType, Priority
from reviews.sources.diffs import ChangedFile, parse_unified_diff
from tests.fakes.gitrepo import GitRepo

BASE = """\
import sys
import subprocess


def legacy(cmd):
    subprocess.call(cmd, shell=True)
    try:
        return 1
    except:
        pass
"""

# The head keeps every pre-existing problem above (unused `sys`, shell=True, bare except) and
# adds new ones below; only the new ones may be reported.
ADDED = """

import json


def run(cmd, name, cursor):
    subprocess.call(cmd, shell=True)
    try:
        cursor.execute("SELECT * FROM users WHERE name = '%s'" % name)
    except:
        pass
    return f"done"


def quiet(cmd):
    subprocess.call(cmd, shell=True)  # noqa  # nosec
"""
HEAD = BASE + ADDED


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{needle!r} not found")


@pytest.fixture(scope="module")
def change(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[ChangedFile]]]:
    repo = GitRepo.init(tmp_path_factory.mktemp("analyzers") / "repo")
    base = repo.commit("base", {"app.py": BASE, "README.md": "hello\n"})
    head = repo.commit("head", {"app.py": HEAD, "README.md": "hello\nworld\n"})
    yield repo.path, parse_unified_diff(repo.git("diff", base, head))


@pytest.fixture(scope="module")
def results(change: tuple[Path, list[ChangedFile]]) -> dict[str, AnalyzerResult]:
    root, files = change
    return {result.reviewer: result for result in run_all(root, files)}


def _by_line(result: AnalyzerResult) -> dict[int, list[dict[str, Any]]]:
    found: dict[int, list[dict[str, Any]]] = {}
    for payload in result.payloads:
        found.setdefault(payload["anchor"]["start_line"], []).append(payload)
    return found


def _codes(payloads: list[dict[str, Any]]) -> set[str]:
    return {payload["title"].split(":", 1)[0] for payload in payloads}


def test_it_reports_ruff_findings_on_added_lines(results: dict[str, AnalyzerResult]) -> None:
    """The new unused import, bare except and placeholder-less f-string are found."""
    ruff = results["ruff"]
    assert ruff.ok and not ruff.rejected
    lines = _by_line(ruff)
    assert "F401" in _codes(lines[_line_of(HEAD, "import json")])
    assert "E722" in _codes(lines[_line_of(HEAD, "except:", 2)])
    assert "F541" in _codes(lines[_line_of(HEAD, 'return f"done"')])


def test_it_reports_bandit_findings_on_added_lines(results: dict[str, AnalyzerResult]) -> None:
    """shell=True, try/except/pass and the %-built SQL string are found by bandit."""
    bandit = results["bandit"]
    assert bandit.ok and not bandit.rejected
    lines = _by_line(bandit)
    shell = lines[_line_of(HEAD, "subprocess.call(cmd, shell=True)", 2)]
    assert "B602" in _codes(shell)
    assert "B608" in _codes(lines[_line_of(HEAD, "SELECT * FROM users")])
    assert "B110" in _codes(lines[_line_of(HEAD, "except:", 2)])


def test_it_ignores_problems_on_unchanged_lines(results: dict[str, AnalyzerResult]) -> None:
    """Pre-existing `import sys`, shell=True and bare except (base lines) are not reported."""
    first_added = _line_of(HEAD, "import json") - 1  # the blank lines before it are added too
    for result in results.values():
        for payload in result.payloads:
            assert payload["anchor"]["start_line"] >= first_added, payload["title"]
    assert "F401" not in _codes(_by_line(results["ruff"]).get(_line_of(HEAD, "import sys"), []))


def test_suppression_comments_are_honoured_and_counted(
    results: dict[str, AnalyzerResult],
) -> None:
    """`# noqa  # nosec` silences that line (the project's own decision), and the stream's
    coverage says how many matches `# nosec` silenced."""
    line = _line_of(HEAD, "# noqa  # nosec")
    assert line not in _by_line(results["bandit"]) and line not in _by_line(results["ruff"])
    assert "1 match silenced by # nosec" in results["bandit"].notes


def test_it_maps_bandit_severity_and_confidence(results: dict[str, AnalyzerResult]) -> None:
    """HIGH/HIGH shell=True is P0 at 0.9; the SQL string (MEDIUM/MEDIUM, P2 by bandit's label)
    is raised to the SQL injection floor P1, with bandit's confidence 0.7."""
    lines = _by_line(results["bandit"])
    shell = next(p for p in lines[_line_of(HEAD, "shell=True", 2)] if p["title"].startswith("B602"))
    assert (shell["priority"], shell["type"], shell["confidence"]) == ("P0", "bug", 0.9)
    assert shell["triage"] == {
        "category": "security",
        "severity": "critical",
        "effort": "small",
        "exploitable_externally": False,
    }
    sql = next(p for p in lines[_line_of(HEAD, "SELECT")] if p["title"].startswith("B608"))
    assert (sql["priority"], sql["type"], sql["confidence"]) == ("P1", "bug", 0.7)
    assert sql["triage"]["severity"] == "high"
    assert "SQL injection, floor P1" in sql["reasoning"]
    assert all(p["triage"]["category"] == "security" for p in results["bandit"].payloads)
    assert bandit_mapping("LOW", "HIGH") == (NodeType.RECOMMENDATION, Priority.P3, 0.9)
    assert bandit_mapping("HIGH", "MEDIUM") == (NodeType.BUG, Priority.P1, 0.7)


def test_it_maps_ruff_rules() -> None:
    """Code that fails is P1, bugbear P2, lint-level pyflakes P3."""
    assert ruff_mapping("F821") == (NodeType.BUG, Priority.P1, Category.CORRECTNESS, 0.9)
    assert ruff_mapping("E999")[1] is Priority.P1
    assert ruff_mapping("E722") == (NodeType.BUG, Priority.P2, Category.STABILITY, 0.8)
    assert ruff_mapping("B006")[:2] == (NodeType.BUG, Priority.P2)
    assert ruff_mapping("F401") == (NodeType.SUGGESTION, Priority.P3, Category.MAINTAINABILITY, 0.9)


def test_it_produces_valid_node_payloads_with_reasoning_first(
    change: tuple[Path, list[ChangedFile]], results: dict[str, AnalyzerResult]
) -> None:
    """Every payload passes parse_node_payload against the checkout, reasoning first."""
    root, _ = change
    lines = len((root / "app.py").read_text().splitlines())
    assert results["ruff"].payloads and results["bandit"].payloads
    for result in results.values():
        for payload in result.payloads:
            assert next(iter(payload)) == "reasoning"
            assert isinstance(parse_node_payload(payload, file_lines={"app.py": lines}), Accepted)


def test_it_offers_replacement_lines_only_for_an_exact_single_line_fix(
    results: dict[str, AnalyzerResult],
) -> None:
    """F541's fix rewrites just its line; F401's deletes a line, so it gets a prompt only."""
    lines = _by_line(results["ruff"])
    fstring = next(
        p for p in lines[_line_of(HEAD, 'return f"done"')] if p["title"].startswith("F541")
    )
    assert fstring["fix"]["replacement_lines"] == ['    return "done"']
    unused = next(p for p in lines[_line_of(HEAD, "import json")] if p["title"].startswith("F401"))
    assert "replacement_lines" not in unused["fix"]
    assert "json" in unused["fix"]["fix_prompt"]
    bare = next(p for p in lines[_line_of(HEAD, "except:", 2)] if p["title"].startswith("E722"))
    assert "fix" not in bare
    for result in results.values():
        for payload in result.payloads:
            fix = payload.get("fix") or {}
            if "replacement_lines" in fix:
                assert payload["anchor"]["start_line"] == payload["anchor"]["end_line"]
                assert len(fix["replacement_lines"]) == 1


def test_it_names_each_analyzer_with_its_dimension(results: dict[str, AnalyzerResult]) -> None:
    """ruff covers quality, bandit security: the pipeline can tell which angles are left."""
    assert RUFF.name == "ruff" and RUFF.dimensions == {Dimension.QUALITY}
    assert BANDIT.name == "bandit" and BANDIT.dimensions == {Dimension.SECURITY}
    assert dimensions_covered(results.values()) == {Dimension.QUALITY, Dimension.SECURITY}
    failed = AnalyzerResult("bandit", BANDIT.dimensions, error="bandit timed out")
    assert dimensions_covered([results["ruff"], failed]) == {Dimension.QUALITY}


def test_it_only_counts_added_lines(change: tuple[Path, list[ChangedFile]]) -> None:
    """Context lines are not changes; the README's added line is listed but never analysed."""
    _, files = change
    added = added_lines(files)
    assert _line_of(HEAD, "import sys") not in added["app.py"]
    assert _line_of(HEAD, "import json") in added["app.py"]
    assert added["README.md"] == {2}
    assert "README.md" not in results_files(files, change[0])


def results_files(files: list[ChangedFile], root: Path) -> tuple[str, ...]:
    return run_ruff(root, files).files_checked + run_bandit(root, files).files_checked


def test_it_reports_nothing_for_a_change_without_python(tmp_path: Path) -> None:
    """No code changed: every analyzer runs cleanly with no findings, and only the secret
    scanner (which reads every file) read the README."""
    repo = GitRepo.init(tmp_path / "docs")
    base = repo.commit("base", {"README.md": "a\n"})
    head = repo.commit("head", {"README.md": "a\nb\n"})
    files = parse_unified_diff(repo.git("diff", base, head))
    for result in run_all(repo.path, files):
        assert result.ok and result.payloads == ()
        assert result.files_checked == (("README.md",) if result.reviewer == "secrets" else ())


def test_it_reports_an_analyzer_that_cannot_finish(change: tuple[Path, list[ChangedFile]]) -> None:
    """A timeout is an error on the result, not an exception and not an empty success."""
    root, files = change
    result = run_bandit(root, files, timeout=0.0001)
    assert not result.ok and "timed out" in (result.error or "")
    assert result.payloads == ()


TAINTED = """\
import yaml


def search(request, cursor):
    term = request.GET["q"]
    cursor.execute("SELECT * FROM items WHERE name = '%s'" % term)


def load(blob):
    return yaml.load(blob)


PASSWORD = "ghp_Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b"
"""


def test_request_input_makes_an_injection_p0_and_credentials_are_never_quoted(
    tmp_path: Path,
) -> None:
    """The severity table on a real bandit run: an injection whose input visibly comes from
    the request is P0 (bandit's own confidence kept), an unsafe deserialization and a
    hard-coded password are at least P1, and B105's message loses the literal it quotes."""
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"README.md": "x\n"})
    head = repo.commit("head", {"views.py": TAINTED})
    bandit = run_bandit(repo.path, parse_unified_diff(repo.git("diff", base, head)))
    assert bandit.ok and not bandit.rejected
    by_code = {p["title"].split(":", 1)[0]: p for p in bandit.payloads}
    sql = by_code["B608"]
    assert (sql["priority"], sql["confidence"]) == ("P0", 0.8)  # bandit: MEDIUM/MEDIUM, tainted
    assert sql["triage"]["exploitable_externally"] is True
    assert "assigned from request data" in sql["reasoning"]
    assert by_code["B506"]["priority"] in ("P0", "P1")
    password = by_code["B105"]
    assert password["priority"] in ("P0", "P1")
    everything = str(bandit.payloads)
    assert "ghp_Q7wE9" not in everything and "[REDACTED:" in password["title"]
