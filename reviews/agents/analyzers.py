"""Offline analyzer reviewers: what every analyzer shares. The analyzers themselves are
ruff_analyzer, bandit_analyzer, js_analyzer (oxlint), pattern_analyzer (ast-grep) and
secret_scan; the registry the pipeline runs is offline.ANALYZERS.

"Without a configured model, offline analyzer reviewers (ruff, bandit) still
produce real findings". Each analyzer is a named reviewer with the dimensions it covers, so the
pipeline can tell which angles no model looked at (the completeness critic). Results become
`add_review_node` payload dicts validated by `parse_node_payload`, exactly like a model's.

Only findings on added lines are kept: a review comments on the change, not on what was already
there (pre-existing problems would drown the new ones and could not be anchored in the diff).

Decisions:
- The repository's own configuration is used when it has one (reviews/agents/tool_config.py
  finds and vets it; the coverage note names it), and so are `# noqa` (by ruff) and `# nosec`
  (by us, so a `# nosec` cannot silence a finding on the high-precision list and the silenced
  ones are counted). Without one, Quorum's defaults apply.
- Precision (reviews/domain/precision.py): production-only bandit rules stay silent in test
  code; a weak hash serving a signature and a constant shell command are lowered with the
  reason; repeated hits of one rule in one file become one finding listing the lines; each
  finding carries its rule and whether it is on the high-precision list (the node's
  `tags["analyzer"]`), which the finaliser reads.
- Triage severity always follows the priority (`severity_for_priority`), effort is small.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviews.domain.nodes import Accepted, parse_node_payload
from reviews.domain.precision import (
    Hit,
    also_on,
    generated_code,
    group_hits,
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

_CHUNK = 200  # files per process: keeps command lines far below the OS limit


@dataclass(frozen=True)
class AnalyzerFinding:
    """A node payload and what the analyzer knows of it (stored as the node's
    `tags["analyzer"]`: tool, rule, high_precision, test_code, lines, defused)."""

    payload: dict[str, Any]
    evidence: dict[str, Any]


@dataclass(frozen=True)
class AnalyzerResult:
    reviewer: str
    dimensions: frozenset[Dimension]
    findings: tuple[AnalyzerFinding, ...] = ()
    files_checked: tuple[str, ...] = ()
    # Findings that failed `parse_node_payload` (a mapping bug, never expected): counted like a
    # model's malformed payloads, never shown.
    rejected: tuple[str, ...] = ()
    # For the coverage note: the configuration used, and what was left out and why.
    notes: tuple[str, ...] = ()
    error: str | None = None  # the analyzer could not run (missing, timed out, bad output)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def payloads(self) -> tuple[dict[str, Any], ...]:
        return tuple(f.payload for f in self.findings)


@dataclass(frozen=True)
class AnalyzerReviewer:
    """A reviewer that needs no model. `axes` are the axes its findings speak to."""

    name: str
    dimensions: frozenset[Dimension]
    axes: frozenset[AxisName]
    run: Callable[..., AnalyzerResult] = field(repr=False)


# -- changed lines -----------------------------------------------------------------------------


def added_lines(
    changed_files: Iterable[ChangedFile], *, generated: bool = False
) -> dict[str, frozenset[int]]:
    """Per path, the RIGHT-side line numbers the change adds (context lines excluded); files
    nobody wrote by hand (`generated_code`: bundles, vendored copies, source maps) only when
    `generated` is asked for."""
    result: dict[str, frozenset[int]] = {}
    for changed in changed_files:
        if changed.new_path is None or changed.is_binary:
            continue
        if not generated and generated_code(changed.path):
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


def source_targets(
    worktree: Path, changed_files: Iterable[ChangedFile], suffixes: tuple[str, ...]
) -> dict[str, frozenset[int]]:
    """Per changed file of these suffixes that is in the checkout, the lines the change adds
    (type declaration files `.d.ts` describe, they do not run: left out)."""
    targets: dict[str, frozenset[int]] = {}
    for path, lines in added_lines(changed_files).items():
        if not path.endswith(suffixes) or path.endswith(".d.ts"):
            continue
        try:
            real = safe_join(worktree, path)
        except UnsafePath:
            continue  # a path from the diff that leads outside the checkout is not ours to read
        if real.is_file():
            targets[path] = lines
    return targets


# -- running the tools -------------------------------------------------------------------------


def tool_command(module: str) -> list[str]:
    """`python -m <tool>` with this interpreter: the tool installed beside Quorum, not whatever
    `PATH` (or the checkout) provides."""
    return [sys.executable, "-m", module]


def tool_path(name: str) -> str:
    """A binary installed beside Quorum (the virtualenv's scripts, where PyPI wheels such as
    oxlint and ast-grep-cli put theirs), not whatever PATH offers."""
    return os.path.join(sysconfig.get_path("scripts"), name)


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


def validated_result(
    reviewer: str,
    dimensions: frozenset[Dimension],
    raw: list[AnalyzerFinding],
    worktree: Path,
    files: Sequence[str],
    notes: Sequence[str] = (),
) -> AnalyzerResult:
    lines = _file_lines(worktree)
    findings: list[AnalyzerFinding] = []
    rejected: list[str] = []
    for finding in raw:
        outcome = parse_node_payload(finding.payload, file_lines=lines)
        if isinstance(outcome, Accepted):
            findings.append(finding)
        else:
            rejected.append(outcome.reason)
    return AnalyzerResult(
        reviewer=reviewer,
        dimensions=dimensions,
        findings=tuple(findings),
        files_checked=tuple(files),
        rejected=tuple(rejected),
        notes=tuple(n for n in notes if n),
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else ("es" if noun.endswith("h") else "s"))


def counted(number: int, noun: str, rest: str) -> str:
    """A coverage-note line such as "3 matches silenced by # nosec", or "" for none."""
    return f"{_count(number, noun)} {rest}" if number else ""


@dataclass
class ToolMatch:
    """One tool match before grouping."""

    rule: str
    path: str
    start: int
    end: int
    payload: dict[str, Any]
    evidence: dict[str, Any]


def finding_payload(
    *,
    reasoning: str,
    node_type: NodeType,
    priority: Priority,
    category: Category,
    path: str,
    lines: tuple[int, int],
    confidence: float,
    title: str,
    body: str,
    fix_prompt: str | None = None,
    exploitable: bool | None = None,
) -> dict[str, Any]:
    """An `add_review_node` payload as every analyzer writes one: reasoning first, triage
    severity following the priority, small effort, the title cut to 200 characters."""
    triage: dict[str, Any] = {
        "category": str(category),
        "severity": str(severity_for_priority(priority)),
        "effort": "small",
    }
    if exploitable is not None:
        triage["exploitable_externally"] = exploitable
    payload: dict[str, Any] = {
        "reasoning": reasoning,
        "type": str(node_type),
        "priority": str(priority),
        "triage": triage,
        "anchor": {"path": path, "start_line": lines[0], "end_line": lines[1]},
        "confidence": confidence,
        "title": title[:200],
        "body": body,
    }
    if fix_prompt is not None:
        payload["fix"] = {"fix_prompt": fix_prompt}
    return payload


def grouped(tool: str, matches: Sequence[ToolMatch]) -> tuple[list[AnalyzerFinding], str]:
    """One finding per rule per file (reviews/domain/precision.py `group_hits`), and the note
    saying how many hits were folded."""
    hits = [
        Hit(
            key=(tool, m.rule, m.path, m.payload["priority"]),
            priority=Priority(m.payload["priority"]),
            start=m.start,
            end=m.end,
            index=i,
        )
        for i, m in enumerate(matches)
    ]
    findings = []
    for group in group_hits(hits):
        lead = matches[group.lead]
        payload = dict(lead.payload)
        evidence = {**lead.evidence, "lines": list(group.lines)}
        if extra := also_on(group.lines, lead.start):
            payload["body"] = f"{payload['body']}\n\n{extra}"
            if fix := payload.get("fix"):
                places = ", ".join(str(n) for n in group.lines)
                payload["fix"] = {
                    **fix,
                    "fix_prompt": f"{fix.get('fix_prompt', '')} The same applies on lines "
                    f"{places} of {lead.path}.".strip(),
                }
        findings.append(AnalyzerFinding(payload, evidence))
    folded = len(matches) - len(findings)
    note = (
        f"{_count(len(matches), 'match')} reported as {_count(len(findings), 'finding')} "
        "(one per rule per file)"
        if folded
        else ""
    )
    return findings, note


# -- ruff --------------------------------------------------------------------------------------


def run_chunked(
    tool: str,
    argv: list[str],
    paths: list[str],
    root: Path,
    timeout: float,
    parse: Callable[[subprocess.CompletedProcess[bytes]], list[dict[str, Any]] | str],
) -> list[dict[str, Any]] | str:
    """`argv -- <chunk of paths>` for every chunk; the parsed results, or the first failure."""
    results: list[dict[str, Any]] = []
    for start in range(0, len(paths), _CHUNK):
        try:
            proc = _run([*argv, "--", *paths[start : start + _CHUNK]], cwd=root, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"{tool} timed out after {timeout:g}s"
        except OSError as exc:
            return f"{tool} could not start ({exc})"
        parsed = parse(proc)
        if isinstance(parsed, str):
            return parsed
        results.extend(parsed)
    return results


# -- bandit ------------------------------------------------------------------------------------


def source_lines(root: Path, path: str) -> list[str]:
    try:
        return safe_join(root, path).read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, UnsafePath):
        return []


# -- helpers and registry ----------------------------------------------------------------------


def relative_path(root: Path, filename: str) -> str:
    """A tool's file name (absolute, or relative to the worktree like `./a.py`) as a repo path."""
    candidate = Path(filename)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        return Path(os.path.realpath(candidate)).relative_to(root).as_posix()
    except ValueError:
        return ""


def tool_failure(tool: str, proc: subprocess.CompletedProcess[bytes]) -> str:
    tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    return f"{tool} failed (exit {proc.returncode}): " + (" / ".join(tail) or "no output")


__all__ = [
    "AnalyzerFinding",
    "AnalyzerResult",
    "AnalyzerReviewer",
    "added_lines",
    "counted",
    "finding_payload",
    "grouped",
    "source_targets",
    "tool_path",
]
