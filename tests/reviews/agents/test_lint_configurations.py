"""The repository's flake8 and pylint configuration, mapped onto ruff: real ruff runs on real
git changes, one per configuration file flake8 reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviews.agents.analyzers import AnalyzerResult
from reviews.agents.ruff_analyzer import run_ruff
from reviews.sources.diffs import parse_unified_diff
from tests.fakes.gitrepo import GitRepo

# A mutable default (B006), a loop variable a closure reads late (B023), a comparison to None
# (E711), an unused import (F401) and a line of 110 characters (E501).
MODULE = """\
import os


def collect(items=[]):
    return [lambda: item for item in items]


def same(value):
    return value == None


LONG = "{long}"
""".replace("{long}", "x" * 96)

# A test that means what bugbear forbids: the broad assertRaises is on purpose.
TEST_MODULE = """\
import unittest


class ParseTests(unittest.TestCase):
    def test_anything_goes_wrong(self):
        with self.assertRaises(Exception):
            int("x")

    def test_defaults(self, seen=[]):
        self.assertEqual(seen, [])
"""

DJANGO_STYLE = """\
[flake8]
extend-ignore = E501,W503,W504,B
extend-select = B006
max-line-length = 120
"""


def _ruff(tmp_path: Path, config: dict[str, str]) -> AnalyzerResult:
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"README.md": "x\n", **config})
    head = repo.commit("head", {"lib/collect.py": MODULE, "tests/test_parse.py": TEST_MODULE})
    return run_ruff(repo.path, parse_unified_diff(repo.git("diff", base, head)))


def _found(result: AnalyzerResult) -> set[tuple[str, str]]:
    return {(f.payload["anchor"]["path"], f.evidence["rule"]) for f in result.findings}


@pytest.mark.parametrize("name", ["setup.cfg", "tox.ini", ".flake8"])
def test_a_flake8_section_decides_the_rules_in_each_file_flake8_reads(
    tmp_path: Path, name: str
) -> None:
    """Bugbear switched off except B006, long lines allowed: B023 and E501 stay silent, B006
    and the flake8 defaults (E711, F401) report, and the note names the file."""
    result = _ruff(tmp_path, {name: DJANGO_STYLE})
    production = {rule for path, rule in _found(result) if path == "lib/collect.py"}
    assert production == {"B006", "E711", "F401"}
    note = " ".join(result.notes)
    assert f"flake8 configuration ({name} [flake8]) mapped onto ruff's rules" in note
    assert "W503" in note  # named as having no ruff rule, not silently lost


def test_flake8_pyproject_table_is_read_too(tmp_path: Path) -> None:
    pyproject = """\
[project]
name = "api"

[tool.flake8]
extend-ignore = ["E501", "W503", "W504", "B"]
extend-select = ["B006"]
"""
    result = _ruff(tmp_path, {"pyproject.toml": pyproject})
    production = {rule for path, rule in _found(result) if path == "lib/collect.py"}
    assert production == {"B006", "E711", "F401"}
    assert any("(pyproject.toml [tool.flake8])" in n for n in result.notes)


def test_bugbear_in_test_code_is_p3_when_asked_and_silent_otherwise(tmp_path: Path) -> None:
    asked = _ruff(tmp_path / "asked", {"setup.cfg": DJANGO_STYLE})
    in_tests = [f for f in asked.findings if f.payload["anchor"]["path"].startswith("tests/")]
    # B006 is asked for (extend-select): reported in the test, as a P3 reminder.
    assert [(f.evidence["rule"], f.payload["priority"]) for f in in_tests] == [("B006", "P3")]
    assert in_tests[0].evidence["test_code"] is True

    defaults = _ruff(tmp_path / "defaults", {})
    tests = {rule for path, rule in _found(defaults) if path.startswith("tests/")}
    assert not tests & {"B006", "B017"}  # Quorum's own default bugbear: not in tests
    production = {rule for path, rule in _found(defaults) if path == "lib/collect.py"}
    assert {"B006", "B023"} <= production
    assert any("in test code the project did not ask for" in n for n in defaults.notes)
    assert any("Quorum's default rules" in n for n in defaults.notes)


def test_select_per_file_ignores_and_complexity_carry_over(tmp_path: Path) -> None:
    config = """\
[flake8]
select = E,F,W,B
ignore = E711
per-file-ignores =
    lib/*.py: F401
    tests/*: B
"""
    result = _ruff(tmp_path, {"setup.cfg": config})
    production = {rule for path, rule in _found(result) if path == "lib/collect.py"}
    # E501 at flake8's default 79, E711 ignored, F401 ignored for lib/, bugbear selected.
    assert production == {"B006", "B023", "E501"}
    assert not {rule for path, rule in _found(result) if path.startswith("tests/")}


def test_pylint_disable_list_maps_by_symbol_and_code(tmp_path: Path) -> None:
    module = "class Box:\n    def __init__(self):\n        return 1\n"  # PLE0101
    repo = GitRepo.init(tmp_path / "repo")
    for disabled, reported in (("return-in-init", False), ("E0101", False), ("C0103", True)):
        base = repo.commit("base", {".pylintrc": f"[MESSAGES CONTROL]\ndisable={disabled}\n"})
        head = repo.commit("head", {"box.py": module})
        result = run_ruff(repo.path, parse_unified_diff(repo.git("diff", base, head)))
        assert ("PLE0101" in {f.evidence["rule"] for f in result.findings}) is reported
        repo.commit("reset", {"box.py": "\n"})


def test_a_flake8_file_that_does_not_parse_leaves_the_defaults_with_the_reason(
    tmp_path: Path,
) -> None:
    result = _ruff(tmp_path, {"setup.cfg": "[flake8\nselect = E\n"})
    note = " ".join(result.notes)
    assert "Quorum's default rules (setup.cfg could not be read" in note
    assert "B006" in {rule for _, rule in _found(result)}
