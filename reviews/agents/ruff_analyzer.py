"""The ruff analyzer reviewer: ruff's findings on the lines a change adds, mapped to nodes, with
a one-click fix where ruff offers a safe one-line edit. Split from analyzers, which holds what
every analyzer shares (results, changed lines, running a tool, payloads).

- Default ruff rules: F (pyflakes: undefined names, unused imports/variables — precise, few false
  positives), E9 (syntax and IO errors), E722 (bare `except`), B (bugbear: likely bugs such as
  mutable defaults or `assert False`), PLE (pylint errors). Never S, even when the repository
  selects it: security is bandit's job, and the same issue reported twice under two reviewers
  would only look like consensus.
- Ruff mapping (type, priority, category, confidence):
    E9, F821/F822/F823, F63x, F7xx      → bug, P1, correctness, 0.9  (code that fails)
    PLE                                 → bug, P2, correctness, 0.7  (inferred, can misfire)
    E722                                → bug, P2, stability, 0.8    (swallows every error)
    B                                   → bug, P2, correctness, 0.7
    other F                             → suggestion, P3, maintainability, 0.9
    anything else                       → suggestion, P3, maintainability, 0.6
- `fix.replacement_lines` only when ruff offers a *safe* fix whose edits all stay on the one
  anchored line and leave exactly one line: that is a one-click suggestion a person can trust
  (docs/domain-rules.md#findings-as-data). Deletions and multi-line fixes get a fix prompt
  instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reviews.agents.analyzers import (
    AnalyzerResult,
    AnalyzerReviewer,
    ToolMatch,
    counted,
    finding_payload,
    grouped,
    relative_path,
    run_chunked,
    source_lines,
    source_targets,
    tool_command,
    tool_failure,
    validated_result,
)
from reviews.agents.tool_config import (
    ToolConfig,
    ruff_config,
)
from reviews.domain.precision import (
    TEST_RULE_PRIORITY,
    fails_in_tests,
    is_test_code,
)
from reviews.domain.types import (
    AxisName,
    Category,
    Dimension,
    NodeType,
    Priority,
)
from reviews.sources.diffs import ChangedFile
from reviews.sources.worktrees import UnsafePath, safe_join

RUFF_RULES = ("F", "E9", "E722", "B", "PLE")


#: Bugbear rules about habits rather than bugs, left out of Quorum's default selection (a
#: project that selects them gets them): unused loop variables, getattr/setattr with a
#: constant, lru_cache on methods, abstract classes without abstract methods, warnings without
#: stacklevel, `raise … from`, zip without strict.
RUFF_DEFAULT_IGNORE = ("B007", "B009", "B010", "B019", "B024", "B027", "B028", "B904", "B905")


RUFF_TIMEOUT = 60.0


def run_ruff(
    worktree: Path | str,
    changed_files: Sequence[ChangedFile],
    *,
    timeout: float = RUFF_TIMEOUT,
) -> AnalyzerResult:
    """Ruff findings on added lines of changed Python files, as node payloads."""
    root = Path(os.path.realpath(worktree))
    targets = source_targets(root, changed_files, (".py", ".pyi"))
    dims = RUFF.dimensions
    if not targets:
        return AnalyzerResult(reviewer="ruff", dimensions=dims)
    paths = sorted(targets)
    config = ruff_config(root, RUFF_RULES, RUFF_DEFAULT_IGNORE)
    found = _ruff_findings(root, paths, config, timeout)
    if isinstance(found, str) and config.path is not None:
        # The repository's configuration made ruff fail (a version pin, an unknown option):
        # review with the defaults rather than not at all, and say so.
        config = ToolConfig(refused=f"ruff could not use {config.path}: {found[:160]}")
        found = _ruff_findings(root, paths, config, timeout)
    if isinstance(found, str):
        return AnalyzerResult("ruff", dims, error=found)

    matches: list[ToolMatch] = []
    tests: dict[str, bool] = {}
    quiet_in_tests = 0
    for item in found:
        path = relative_path(root, str(item.get("filename", "")))
        location = item.get("location") or {}
        row = location.get("row")
        code = str(item.get("code") or "")
        if path not in targets or not isinstance(row, int) or row not in targets[path]:
            continue
        if re.fullmatch(r"S\d*", code):
            continue  # security rules are bandit's, whatever the repository selects
        if path not in tests:
            tests[path] = is_test_code(path, "\n".join(source_lines(root, path)))
        test_code = tests[path] and not fails_in_tests(code)
        if test_code and not config.asks_for(code):
            quiet_in_tests += 1  # bugbear and style in tests: only where the project asked
            continue
        end_row = max(row, (item.get("end_location") or {}).get("row", row))
        payload = _ruff_payload(root, path, item, row, end_row, test_code=test_code)
        evidence = {
            "tool": "ruff",
            "rule": code or "ruff",
            "high_precision": False,
            "test_code": tests[path],
        }
        matches.append(ToolMatch(code, path, row, end_row, payload, evidence))
    findings, folded = grouped("ruff", matches)
    changed = [f.path for f in changed_files]
    notes = [
        config.describe("ruff", changed) + "; # noqa honoured",
        counted(
            quiet_in_tests,
            "match",
            "of bugbear or style rules in test code the project did not ask for not reported",
        ),
        folded,
    ]
    return validated_result("ruff", dims, findings, root, paths, notes)


def _ruff_findings(
    root: Path, paths: list[str], config: ToolConfig, timeout: float
) -> list[dict[str, Any]] | str:
    """Ruff's JSON findings for `paths`, or why ruff failed."""
    if config.path is not None:
        # --force-exclude: the repository's excludes apply to files named on the command line.
        options = [*config.args, "--force-exclude"]
    else:
        options = [
            "--isolated",
            *("--select", ",".join(RUFF_RULES)),
            *("--ignore", ",".join(RUFF_DEFAULT_IGNORE)),
        ]
    argv = [*tool_command("ruff"), "check", "--no-cache", "--output-format", "json", *options]

    def parse(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]] | str:
        # Exit 1 only means "violations found"; 2 is ruff's own failure.
        if proc.returncode not in (0, 1):
            return tool_failure("ruff", proc)
        try:
            found = json.loads(proc.stdout or b"[]")
        except ValueError:
            return "ruff printed output that is not JSON"
        return found if isinstance(found, list) else "ruff printed output that is not a list"

    return run_chunked("ruff", argv, paths, root, timeout, parse)


def ruff_mapping(code: str) -> tuple[NodeType, Priority, Category, float]:
    """(type, priority, category, confidence) for a ruff rule code; see the module docstring."""
    if code.startswith(("E9", "F63", "F7")) or code in ("F821", "F822", "F823"):
        return NodeType.BUG, Priority.P1, Category.CORRECTNESS, 0.9
    if code.startswith("PLE"):
        # Pylint's "errors" rest on inference ruff cannot always complete (a bare `raise` in
        # a helper called from `except`, a computed `__all__`): likely bugs, not certain ones.
        return NodeType.BUG, Priority.P2, Category.CORRECTNESS, 0.7
    if code == "E722":
        return NodeType.BUG, Priority.P2, Category.STABILITY, 0.8
    if code.startswith("B"):
        return NodeType.BUG, Priority.P2, Category.CORRECTNESS, 0.7
    if code.startswith("F"):
        return NodeType.SUGGESTION, Priority.P3, Category.MAINTAINABILITY, 0.9
    return NodeType.SUGGESTION, Priority.P3, Category.MAINTAINABILITY, 0.6


def _ruff_payload(
    root: Path, path: str, item: Mapping[str, Any], row: int, end_row: int, *, test_code: bool
) -> dict[str, Any]:
    code = str(item.get("code") or "ruff")
    name = str(item.get("name") or "")
    message = str(item.get("message") or name or code)
    node_type, priority, category, confidence = ruff_mapping(code)
    in_tests = ""
    if test_code and priority.rank < TEST_RULE_PRIORITY.rank:
        # Test code asserts on purpose what production code must not do (a broad
        # assertRaises, a property read inside pytest.raises): a reminder, not a bug.
        node_type, priority = NodeType.SUGGESTION, TEST_RULE_PRIORITY
        in_tests = "; at most P3 in test code"
    fix: dict[str, Any] = {}
    ruff_fix = item.get("fix") or None
    if ruff_fix:
        replacement = (
            _single_line_replacement(root, path, row, ruff_fix) if row == end_row else None
        )
        if replacement is not None:
            fix["replacement_lines"] = [replacement]
        fix["fix_prompt"] = f"In {path} line {row}: {ruff_fix.get('message') or message}."
    url = item.get("url")
    body = f"ruff `{code}` ({name}): {message}." + (f"\n\nRule: {url}" if url else "")
    payload = finding_payload(
        reasoning=(
            f"ruff rule {code} ({name}) reports this on line {row}, which the change adds; "
            f"mapped to {priority} {node_type} by the analyzer table{in_tests}."
        ),
        node_type=node_type,
        priority=priority,
        category=category,
        path=path,
        lines=(row, end_row),
        confidence=confidence,
        title=f"{code}: {message}",
        body=body,
    )
    if fix:
        payload["fix"] = fix
    return payload


def _single_line_replacement(
    root: Path, path: str, row: int, ruff_fix: Mapping[str, Any]
) -> str | None:
    """The new text of line `row` when a safe fix only rewrites that line, else None."""
    if ruff_fix.get("applicability") != "safe":
        return None
    edits = ruff_fix.get("edits") or []
    if not edits:
        return None
    try:
        lines = safe_join(root, path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError, UnsafePath):
        return None
    if row > len(lines):
        return None
    line = lines[row - 1]
    # Apply right to left so earlier columns stay valid. Ruff columns are 1-based characters.
    for edit in sorted(edits, key=lambda e: e["location"]["column"], reverse=True):
        start, end = edit.get("location") or {}, edit.get("end_location") or {}
        content = edit.get("content", "")
        if start.get("row") != row or end.get("row") != row or "\n" in content:
            return None  # touches another line (e.g. deleting the whole line)
        line = line[: start["column"] - 1] + content + line[end["column"] - 1 :]
    return line


RUFF = AnalyzerReviewer(
    name="ruff",
    dimensions=frozenset({Dimension.QUALITY}),
    axes=frozenset({AxisName.CORRECTNESS}),
    run=run_ruff,
)
