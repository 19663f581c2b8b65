"""Offline analyzer reviewers: ruff and bandit findings on the lines a change adds.

"Without a configured model, offline analyzer reviewers (ruff, bandit) still
produce real findings". Each analyzer is a named reviewer with the dimensions it covers, so the
pipeline can tell which angles no model looked at (§3.10 completeness critic). Results become
`add_review_node` payload dicts validated by `parse_node_payload`, exactly like a model's.

Only findings on added lines are kept: a review comments on the change, not on what was already
there (pre-existing problems would drown the new ones and could not be anchored in the diff).

Decisions:
- The PR's own configuration is ignored (`ruff --isolated`, no bandit config) and so are
  suppression comments (`--ignore-noqa`, `--ignore-nosec`): the checkout is untrusted input, and
  an added `# noqa` must not be able to silence the reviewer of the very line it sits on.
- Ruff rules: F (pyflakes: undefined names, unused imports/variables — precise, few false
  positives), E9 (syntax and IO errors), E722 (bare `except`), B (bugbear: likely bugs such as
  mutable defaults or `assert False`), PLE (pylint errors). Not S: security is bandit's job, and
  the same issue reported twice under two reviewers would only look like consensus.
- Ruff mapping (type, priority, category, confidence):
    E9, F821/F822/F823, F63x, F7xx, PLE  → bug, P1, correctness, 0.9  (code that fails)
    E722                                → bug, P2, stability, 0.8    (swallows every error)
    B                                   → bug, P2, correctness, 0.7
    other F                             → suggestion, P3, maintainability, 0.9
    anything else                       → suggestion, P3, maintainability, 0.6
- Bandit mapping: category security; priority from severity (HIGH → P1, MEDIUM → P2, LOW → P3),
  raised to P0 when severity and confidence are both HIGH; confidence from bandit's confidence
  (HIGH 0.9, MEDIUM 0.7, LOW 0.4); type bug for HIGH/MEDIUM severity, recommendation for LOW.
  Then the floor of the finding's defect class (reviews/domain/severity_floors.py,
  docs/analyzer-severities.md) raises the priority: injections, unsafe deserialization,
  credentials, disabled TLS verification and weak cryptography are at least P1, and an
  injection whose input visibly comes from a request in the change is P0. A credential rule's
  message never quotes the value it found.
- Triage severity always follows the priority (`severity_for_priority`), effort is small.
- `fix.replacement_lines` only when ruff offers a *safe* fix whose edits all stay on the one
  anchored line and leave exactly one line: that is a one-click suggestion a person can trust
  (§3.2). Deletions and multi-line fixes get a fix prompt instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviews.domain.nodes import Accepted, parse_node_payload
from reviews.domain.severity_floors import (
    DefectClass,
    Taint,
    classify,
    floor_for,
    raise_to_floor,
    request_input,
)
from reviews.domain.types import (
    AxisName,
    Category,
    Dimension,
    NodeType,
    Priority,
    severity_for_priority,
)
from reviews.sources.diffs import ChangedFile
from reviews.sources.worktrees import UnsafePath, safe_join

RUFF_RULES = ("F", "E9", "E722", "B", "PLE")
RUFF_TIMEOUT = 60.0
BANDIT_TIMEOUT = 120.0
_CHUNK = 200  # files per process: keeps command lines far below the OS limit


@dataclass(frozen=True)
class AnalyzerResult:
    reviewer: str
    dimensions: frozenset[Dimension]
    payloads: tuple[dict[str, Any], ...] = ()
    files_checked: tuple[str, ...] = ()
    # Findings that failed `parse_node_payload` (a mapping bug, never expected): counted like a
    # model's malformed payloads, never shown.
    rejected: tuple[str, ...] = ()
    error: str | None = None  # the analyzer could not run (missing, timed out, bad output)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class AnalyzerReviewer:
    """A reviewer that needs no model. `axes` are the §3.6 axes its findings speak to."""

    name: str
    dimensions: frozenset[Dimension]
    axes: frozenset[AxisName]
    run: Callable[..., AnalyzerResult] = field(repr=False)


# -- changed lines -----------------------------------------------------------------------------


def added_lines(changed_files: Iterable[ChangedFile]) -> dict[str, frozenset[int]]:
    """Per path, the RIGHT-side line numbers the change adds (context lines excluded)."""
    result: dict[str, frozenset[int]] = {}
    for changed in changed_files:
        if changed.new_path is None or changed.is_binary:
            continue
        lines = {
            line.new_line
            for hunk in changed.hunks
            for line in hunk.lines
            if line.kind == "+" and line.new_line is not None
        }
        if lines:
            result[changed.path] = frozenset(lines)
    return result


def _python_targets(
    worktree: Path, changed_files: Iterable[ChangedFile], suffixes: tuple[str, ...]
) -> dict[str, frozenset[int]]:
    targets: dict[str, frozenset[int]] = {}
    for path, lines in added_lines(changed_files).items():
        if not path.endswith(suffixes):
            continue
        try:
            real = safe_join(worktree, path)
        except UnsafePath:
            continue  # a path from the diff that leads outside the checkout is not ours to read
        if real.is_file():
            targets[path] = lines
    return targets


# -- running the tools -------------------------------------------------------------------------


def _tool_command(module: str) -> list[str]:
    """`python -m <tool>` with this interpreter: the tool installed beside Quorum, not whatever
    `PATH` (or the checkout) provides."""
    return [sys.executable, "-m", module]


def _run(argv: list[str], *, cwd: Path, timeout: float) -> subprocess.CompletedProcess[bytes]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    }
    # No secrets from our environment reach a tool that reads untrusted files.
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=timeout, check=False)


def _file_lines(worktree: Path) -> Callable[[str], int | None]:
    def count(path: str) -> int | None:
        try:
            return len(safe_join(worktree, path).read_bytes().splitlines())
        except (OSError, UnsafePath):
            return None

    return count


def _validated(
    reviewer: str,
    dimensions: frozenset[Dimension],
    raw: list[dict[str, Any]],
    worktree: Path,
    files: Sequence[str],
) -> AnalyzerResult:
    lines = _file_lines(worktree)
    payloads: list[dict[str, Any]] = []
    rejected: list[str] = []
    for payload in raw:
        outcome = parse_node_payload(payload, file_lines=lines)
        if isinstance(outcome, Accepted):
            payloads.append(payload)
        else:
            rejected.append(outcome.reason)
    return AnalyzerResult(
        reviewer=reviewer,
        dimensions=dimensions,
        payloads=tuple(payloads),
        files_checked=tuple(files),
        rejected=tuple(rejected),
    )


# -- ruff --------------------------------------------------------------------------------------


def run_ruff(
    worktree: Path | str,
    changed_files: Sequence[ChangedFile],
    *,
    timeout: float = RUFF_TIMEOUT,
) -> AnalyzerResult:
    """Ruff findings on added lines of changed Python files, as node payloads."""
    root = Path(os.path.realpath(worktree))
    targets = _python_targets(root, changed_files, (".py", ".pyi"))
    dims = RUFF.dimensions
    if not targets:
        return AnalyzerResult(reviewer="ruff", dimensions=dims)
    findings: list[dict[str, Any]] = []
    paths = sorted(targets)
    for start in range(0, len(paths), _CHUNK):
        chunk = paths[start : start + _CHUNK]
        argv = [
            *_tool_command("ruff"),
            "check",
            "--isolated",
            "--no-cache",
            "--ignore-noqa",
            "--output-format",
            "json",
            "--select",
            ",".join(RUFF_RULES),
            "--",
            *chunk,
        ]
        try:
            proc = _run(argv, cwd=root, timeout=timeout)
        except subprocess.TimeoutExpired:
            return AnalyzerResult("ruff", dims, error=f"ruff timed out after {timeout:g}s")
        except OSError as exc:
            return AnalyzerResult("ruff", dims, error=f"ruff could not start ({exc})")
        # Exit 1 only means "violations found"; 2 is ruff's own failure.
        if proc.returncode not in (0, 1):
            return AnalyzerResult("ruff", dims, error=_stderr("ruff", proc))
        try:
            found = json.loads(proc.stdout or b"[]")
        except ValueError:
            return AnalyzerResult("ruff", dims, error="ruff printed output that is not JSON")
        findings.extend(found)

    raw: list[dict[str, Any]] = []
    for item in findings:
        path = _relative(root, str(item.get("filename", "")))
        location = item.get("location") or {}
        row = location.get("row")
        if path not in targets or not isinstance(row, int) or row not in targets[path]:
            continue
        end_row = (item.get("end_location") or {}).get("row", row)
        raw.append(_ruff_payload(root, path, item, row, max(row, end_row)))
    return _validated("ruff", dims, raw, root, paths)


def ruff_mapping(code: str) -> tuple[NodeType, Priority, Category, float]:
    """(type, priority, category, confidence) for a ruff rule code; see the module docstring."""
    if code.startswith(("E9", "F63", "F7", "PLE")) or code in ("F821", "F822", "F823"):
        return NodeType.BUG, Priority.P1, Category.CORRECTNESS, 0.9
    if code == "E722":
        return NodeType.BUG, Priority.P2, Category.STABILITY, 0.8
    if code.startswith("B"):
        return NodeType.BUG, Priority.P2, Category.CORRECTNESS, 0.7
    if code.startswith("F"):
        return NodeType.SUGGESTION, Priority.P3, Category.MAINTAINABILITY, 0.9
    return NodeType.SUGGESTION, Priority.P3, Category.MAINTAINABILITY, 0.6


def _ruff_payload(
    root: Path, path: str, item: Mapping[str, Any], row: int, end_row: int
) -> dict[str, Any]:
    code = str(item.get("code") or "ruff")
    name = str(item.get("name") or "")
    message = str(item.get("message") or name or code)
    node_type, priority, category, confidence = ruff_mapping(code)
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
    payload: dict[str, Any] = {
        "reasoning": (
            f"ruff rule {code} ({name}) reports this on line {row}, which the change adds; "
            f"mapped to {priority} {node_type} by the analyzer table."
        ),
        "type": str(node_type),
        "priority": str(priority),
        "triage": {
            "category": str(category),
            "severity": str(severity_for_priority(priority)),
            "effort": "small",
        },
        "anchor": {"path": path, "start_line": row, "end_line": end_row},
        "confidence": confidence,
        "title": f"{code}: {message}"[:200],
        "body": body,
    }
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


# -- bandit ------------------------------------------------------------------------------------

_BANDIT_PRIORITY = {"HIGH": Priority.P1, "MEDIUM": Priority.P2, "LOW": Priority.P3}
_BANDIT_CONFIDENCE = {"HIGH": 0.9, "MEDIUM": 0.7, "LOW": 0.4}


def bandit_mapping(severity: str, confidence: str) -> tuple[NodeType, Priority, float]:
    """(type, priority, confidence) for bandit's issue severity and confidence."""
    severity, confidence = severity.upper(), confidence.upper()
    priority = _BANDIT_PRIORITY.get(severity, Priority.P3)
    if severity == "HIGH" and confidence == "HIGH":
        priority = Priority.P0
    node_type = NodeType.RECOMMENDATION if severity == "LOW" else NodeType.BUG
    return node_type, priority, _BANDIT_CONFIDENCE.get(confidence, 0.4)


def run_bandit(
    worktree: Path | str,
    changed_files: Sequence[ChangedFile],
    *,
    timeout: float = BANDIT_TIMEOUT,
) -> AnalyzerResult:
    """Bandit findings on added lines of changed Python files, as node payloads."""
    root = Path(os.path.realpath(worktree))
    targets = _python_targets(root, changed_files, (".py",))
    dims = BANDIT.dimensions
    if not targets:
        return AnalyzerResult(reviewer="bandit", dimensions=dims)
    results: list[dict[str, Any]] = []
    paths = sorted(targets)
    for start in range(0, len(paths), _CHUNK):
        chunk = paths[start : start + _CHUNK]
        argv = [*_tool_command("bandit"), "-f", "json", "-q", "--ignore-nosec", "--", *chunk]
        try:
            proc = _run(argv, cwd=root, timeout=timeout)
        except subprocess.TimeoutExpired:
            return AnalyzerResult("bandit", dims, error=f"bandit timed out after {timeout:g}s")
        except OSError as exc:
            return AnalyzerResult("bandit", dims, error=f"bandit could not start ({exc})")
        try:
            report = json.loads(proc.stdout or b"{}")
        except ValueError:
            return AnalyzerResult("bandit", dims, error=_stderr("bandit", proc))
        if proc.returncode not in (0, 1) or not isinstance(report, dict):
            return AnalyzerResult("bandit", dims, error=_stderr("bandit", proc))
        results.extend(report.get("results") or [])

    change_lines = [
        line.text
        for changed in changed_files
        for hunk in changed.hunks
        for line in hunk.lines
        if line.kind == "+"
    ]
    raw: list[dict[str, Any]] = []
    for item in results:
        path = _relative(root, str(item.get("filename", "")))
        line = item.get("line_number")
        if path not in targets or not isinstance(line, int):
            continue
        span = [n for n in item.get("line_range") or [line] if isinstance(n, int)] or [line]
        # A multi-line statement counts as changed when any of its lines is added.
        if not any(n in targets[path] for n in span):
            continue
        start, end = min(*span, line), max(*span, line)
        defect = classify(str(item.get("test_id") or ""), _cwe(item))
        taint = None
        if defect is not None:
            taint = request_input(
                _source_lines(root, path),
                start,
                end,
                added=targets[path],
                change_lines=change_lines,
            )
        raw.append(_bandit_payload(path, item, start, end, defect=defect, taint=taint))
    return _validated("bandit", dims, raw, root, paths)


def _cwe(item: Mapping[str, Any]) -> int | None:
    cwe = (item.get("issue_cwe") or {}).get("id")
    return cwe if isinstance(cwe, int) else None


def _source_lines(root: Path, path: str) -> list[str]:
    try:
        return safe_join(root, path).read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, UnsafePath):
        return []


_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")


def _bandit_payload(
    path: str,
    item: Mapping[str, Any],
    start: int,
    end: int,
    *,
    defect: DefectClass | None = None,
    taint: Taint | None = None,
) -> dict[str, Any]:
    test_id = str(item.get("test_id") or "bandit")
    test_name = str(item.get("test_name") or "")
    severity = str(item.get("issue_severity") or "LOW")
    confidence_word = str(item.get("issue_confidence") or "LOW")
    text = str(item.get("issue_text") or test_name or test_id).strip()
    if defect is DefectClass.HARDCODED_CREDENTIAL:
        # B105 quotes the literal it found: the value itself must never be repeated.
        text = _QUOTED.sub("'[REDACTED:hardcoded_credential]'", text)
    node_type, tool_priority, confidence = bandit_mapping(severity, confidence_word)
    floor = floor_for(defect, request_input=taint is not None)
    priority = raise_to_floor(tool_priority, floor)
    if priority.rank < tool_priority.rank:
        node_type = NodeType.BUG
    cwe = _cwe(item)
    more = item.get("more_info")
    body = f"bandit `{test_id}` ({test_name}): {text}" + (f" (CWE-{cwe})" if cwe else "")
    if defect is not None:
        body += f"\n\nClass: {defect.label}" + (
            f"; request input: {taint.reason}." if taint else "."
        )
    if more:
        body += f"\n\nDetails: {more}"
    why = f"bandit's own label maps to {tool_priority}"
    if defect is not None:
        why += f"; the severity table classes {test_id} as {defect.label}, floor {floor}"
        if taint is not None:
            why += f" because {taint.reason}"
        why += f"; priority {priority}"
    return {
        "reasoning": (
            f"bandit {test_id} reports {severity} severity with {confidence_word} confidence on "
            f"lines the change adds ({start}-{end}); {why}."
        ),
        "type": str(node_type),
        "priority": str(priority),
        "triage": {
            "category": str(Category.SECURITY),
            "severity": str(severity_for_priority(priority)),
            "effort": "small",
            "exploitable_externally": taint is not None,
        },
        "anchor": {"path": path, "start_line": start, "end_line": end},
        "confidence": confidence,
        "title": f"{test_id}: {text}"[:200],
        "body": body,
        "fix": {"fix_prompt": f"In {path} lines {start}-{end}: {text} See {more or test_id}."},
    }


# -- helpers and registry ----------------------------------------------------------------------


def _relative(root: Path, filename: str) -> str:
    """A tool's file name (absolute, or relative to the worktree like `./a.py`) as a repo path."""
    candidate = Path(filename)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        return Path(os.path.realpath(candidate)).relative_to(root).as_posix()
    except ValueError:
        return ""


def _stderr(tool: str, proc: subprocess.CompletedProcess[bytes]) -> str:
    tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    return f"{tool} failed (exit {proc.returncode}): " + (" / ".join(tail) or "no output")


RUFF = AnalyzerReviewer(
    name="ruff",
    dimensions=frozenset({Dimension.QUALITY}),
    axes=frozenset({AxisName.CORRECTNESS}),
    run=run_ruff,
)
BANDIT = AnalyzerReviewer(
    name="bandit",
    dimensions=frozenset({Dimension.SECURITY}),
    axes=frozenset({AxisName.SECURITY}),
    run=run_bandit,
)
ANALYZERS: tuple[AnalyzerReviewer, ...] = (RUFF, BANDIT)


def run_analyzers(
    worktree: Path | str, changed_files: Sequence[ChangedFile]
) -> list[AnalyzerResult]:
    """Every analyzer reviewer over the change; one failing analyzer never hides the other."""
    return [analyzer.run(worktree, changed_files) for analyzer in ANALYZERS]


def dimensions_covered(results: Iterable[AnalyzerResult]) -> frozenset[Dimension]:
    """Dimensions an analyzer actually ran for (a failed run covers nothing)."""
    covered: set[Dimension] = set()
    for result in results:
        if result.ok:
            covered |= result.dimensions
    return frozenset(covered)


__all__ = [
    "ANALYZERS",
    "BANDIT",
    "RUFF",
    "RUFF_RULES",
    "AnalyzerResult",
    "AnalyzerReviewer",
    "added_lines",
    "bandit_mapping",
    "dimensions_covered",
    "ruff_mapping",
    "run_analyzers",
    "run_bandit",
    "run_ruff",
]
