"""Offline analyzer reviewers: ruff and bandit findings on the lines a change adds.

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
  ones are counted). Without one, Quorum's defaults below apply.
- Precision (reviews/domain/precision.py): production-only bandit rules stay silent in test
  code; a weak hash serving a signature and a constant shell command are lowered with the
  reason; repeated hits of one rule in one file become one finding listing the lines; each
  finding carries its rule and whether it is on the high-precision list (the node's
  `tags["analyzer"]`), which the finaliser reads.
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
- Bandit mapping: category security; priority from severity (HIGH → P1, MEDIUM → P2, LOW → P3),
  raised to P0 when severity and confidence are both HIGH (weak cryptography stops at P1);
  confidence from bandit's confidence
  (HIGH 0.9, MEDIUM 0.7, LOW 0.4), at least 0.8 when request input visibly reaches the match;
  type bug for HIGH/MEDIUM severity, recommendation for LOW.
  Then the floor of the finding's defect class (reviews/domain/severity_floors.py,
  docs/analyzer-severities.md) raises the priority: injections, unsafe deserialization,
  credentials, disabled TLS verification and weak cryptography are at least P1, and an
  injection whose input visibly comes from a request in the change is P0. The floor needs
  bandit to be at least MEDIUM sure of the match (or the request input), and a credential rule
  a literal that could be a secret. A credential rule's message never quotes the value.
- Triage severity always follows the priority (`severity_for_priority`), effort is small.
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
import sys
import sysconfig
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviews.agents.tool_config import (
    ToolConfig,
    bandit_config,
    excluded,
    nosec_silences,
    ruff_config,
)
from reviews.domain.analyzer_fixes import bandit_fix
from reviews.domain.nodes import Accepted, parse_node_payload
from reviews.domain.precision import (
    PRODUCTION_ONLY_RULES,
    TEST_RULE_PRIORITY,
    Defused,
    Hit,
    also_on,
    defusing_context,
    fails_in_tests,
    generated_code,
    group_hits,
    high_precision,
    is_test_code,
    narrowing_assert,
    plausible_secret,
)
from reviews.domain.severity_floors import (
    DefectClass,
    Taint,
    cap_label,
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
#: Bugbear rules about habits rather than bugs, left out of Quorum's default selection (a
#: project that selects them gets them): unused loop variables, getattr/setattr with a
#: constant, lru_cache on methods, abstract classes without abstract methods, warnings without
#: stacklevel, `raise … from`, zip without strict.
RUFF_DEFAULT_IGNORE = ("B007", "B009", "B010", "B019", "B024", "B027", "B028", "B904", "B905")
RUFF_TIMEOUT = 60.0
BANDIT_TIMEOUT = 120.0
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


def _tool_command(module: str) -> list[str]:
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


def _validated(
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
        path = _relative(root, str(item.get("filename", "")))
        location = item.get("location") or {}
        row = location.get("row")
        code = str(item.get("code") or "")
        if path not in targets or not isinstance(row, int) or row not in targets[path]:
            continue
        if re.fullmatch(r"S\d*", code):
            continue  # security rules are bandit's, whatever the repository selects
        if path not in tests:
            tests[path] = is_test_code(path, "\n".join(_source_lines(root, path)))
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
    return _validated("ruff", dims, findings, root, paths, notes)


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
    argv = [*_tool_command("ruff"), "check", "--no-cache", "--output-format", "json", *options]

    def parse(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]] | str:
        # Exit 1 only means "violations found"; 2 is ruff's own failure.
        if proc.returncode not in (0, 1):
            return _stderr("ruff", proc)
        try:
            found = json.loads(proc.stdout or b"[]")
        except ValueError:
            return "ruff printed output that is not JSON"
        return found if isinstance(found, list) else "ruff printed output that is not a list"

    return _run_chunked("ruff", argv, paths, root, timeout, parse)


def _run_chunked(
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


# -- bandit ------------------------------------------------------------------------------------

_BANDIT_PRIORITY = {"HIGH": Priority.P1, "MEDIUM": Priority.P2, "LOW": Priority.P3}
_BANDIT_CONFIDENCE = {"HIGH": 0.9, "MEDIUM": 0.7, "LOW": 0.4}
#: Confidence of a match whose request input the change visibly feeds (at least).
TAINTED_CONFIDENCE = 0.8


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
    targets = source_targets(root, changed_files, (".py",))
    dims = BANDIT.dimensions
    config = bandit_config(root)
    targets = {p: lines for p, lines in targets.items() if not excluded(p, config.exclude)}
    if not targets:
        return AnalyzerResult(reviewer="bandit", dimensions=dims)
    paths = sorted(targets)
    results = _bandit_results(root, paths, config, timeout)
    if isinstance(results, str) and config.path is not None:
        config = ToolConfig(refused=f"bandit could not use {config.path}: {results[:160]}")
        results = _bandit_results(root, paths, config, timeout)
    if isinstance(results, str):
        return AnalyzerResult("bandit", dims, error=results)

    change_lines = [
        line.text
        for changed in changed_files
        for hunk in changed.hunks
        for line in hunk.lines
        if line.kind == "+"
    ]
    sources: dict[str, list[str]] = {}
    in_tests = silenced = narrowing = no_value = 0
    matches: list[ToolMatch] = []
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
        rule = str(item.get("test_id") or "bandit")
        if path not in sources:
            sources[path] = _source_lines(root, path)
        lines = sources[path]
        test_code = is_test_code(path, "\n".join(lines))
        if test_code and rule in PRODUCTION_ONLY_RULES:
            in_tests += 1
            continue
        if rule == "B101" and narrowing_assert(lines, start, end):
            narrowing += 1
            continue
        defect = classify(rule, _cwe(item))
        if defect is DefectClass.HARDCODED_CREDENTIAL and _NO_VALUE.search(
            str(item.get("issue_text") or "")
        ):
            no_value += 1  # `TOKEN = None`, `password = ""`: a name with nothing in it
            continue
        taint = None
        if defect is not None:
            taint = request_input(lines, start, end, added=targets[path], change_lines=change_lines)
        precise = high_precision(defect=defect, request_input=taint is not None)
        if not precise and nosec_silences(lines, span, rule, str(item.get("test_name") or "")):
            silenced += 1
            continue
        defused = None
        if taint is None:
            defused = defusing_context(
                rule, lines, start, end, tool_severity=str(item.get("issue_severity") or "")
            )
        payload = _bandit_payload(
            path, item, start, end, defect=defect, taint=taint, defused=defused
        )
        evidence: dict[str, Any] = {
            "tool": "bandit",
            "rule": rule,
            "high_precision": precise,
            "test_code": test_code,
        }
        if defused is not None:
            evidence["defused"] = defused.reason
        matches.append(ToolMatch(rule, path, start, end, payload, evidence))
    findings, folded = grouped("bandit", matches)
    notes = [
        config.describe("bandit", [f.path for f in changed_files]),
        counted(in_tests, "match", "of production-only rules in test code not reported"),
        counted(silenced, "match", "silenced by # nosec"),
        counted(narrowing, "assert", "narrowing a type not reported (B101)"),
        counted(no_value, "match", "of credential rules on None or an empty string not reported"),
        folded,
    ]
    return _validated("bandit", dims, findings, root, paths, notes)


def _bandit_results(
    root: Path, paths: list[str], config: ToolConfig, timeout: float
) -> list[dict[str, Any]] | str:
    """Bandit's JSON results for `paths`, or why bandit failed. `--ignore-nosec`: the
    comments are read by `nosec_silences`, which keeps the high-precision findings."""
    argv = [*_tool_command("bandit"), "-f", "json", "-q", "--ignore-nosec", *config.args]

    def parse(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]] | str:
        try:
            report = json.loads(proc.stdout or b"{}")
        except ValueError:
            return _stderr("bandit", proc)
        if proc.returncode not in (0, 1) or not isinstance(report, dict):
            return _stderr("bandit", proc)
        return list(report.get("results") or [])

    return _run_chunked("bandit", argv, paths, root, timeout, parse)


def _cwe(item: Mapping[str, Any]) -> int | None:
    cwe = (item.get("issue_cwe") or {}).get("id")
    return cwe if isinstance(cwe, int) else None


def _source_lines(root: Path, path: str) -> list[str]:
    try:
        return safe_join(root, path).read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, UnsafePath):
        return []


_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
# Bandit quotes the literal it matched: `'None'` for None, `''` for an empty string.
_NO_VALUE = re.compile(r":\s*(?:'None'|''|\"\")\s*$")


def _bandit_payload(
    path: str,
    item: Mapping[str, Any],
    start: int,
    end: int,
    *,
    defect: DefectClass | None = None,
    taint: Taint | None = None,
    defused: Defused | None = None,
) -> dict[str, Any]:
    test_id = str(item.get("test_id") or "bandit")
    test_name = str(item.get("test_name") or "")
    severity = str(item.get("issue_severity") or "LOW")
    confidence_word = str(item.get("issue_confidence") or "LOW")
    text = str(item.get("issue_text") or test_name or test_id).strip()
    literal = _QUOTED.search(text)
    if defect is DefectClass.HARDCODED_CREDENTIAL:
        # B105 quotes the literal it found: the value itself must never be repeated.
        text = _QUOTED.sub("'[REDACTED:hardcoded_credential]'", text)
    node_type, tool_priority, confidence = bandit_mapping(severity, confidence_word)
    tool_priority = cap_label(tool_priority, defect)
    floor = floor_for(defect, request_input=taint is not None)
    unfloored = ""
    if floor is not None and taint is None and confidence_word.upper() == "LOW":
        unfloored = "bandit itself is unsure of the match (LOW confidence)"
    elif (
        defect is DefectClass.HARDCODED_CREDENTIAL
        and literal is not None
        and not plausible_secret(literal.group(0)[1:-1])
    ):
        unfloored = "the literal does not look like a secret (empty, a word or a template)"
    if unfloored:
        floor = None
    priority = raise_to_floor(tool_priority, floor)
    if priority.rank < tool_priority.rank:
        node_type = NodeType.BUG
    if taint is not None and confidence < TAINTED_CONFIDENCE:
        # Two independent signals: the pattern, and request data visibly reaching it.
        confidence = TAINTED_CONFIDENCE
    if defused is not None and defused.priority.rank > priority.rank:
        # The context defuses the rule: neither bandit's label nor the class floor applies.
        priority, node_type = defused.priority, NodeType.RECOMMENDATION
    cwe = _cwe(item)
    more = item.get("more_info")
    body = f"bandit `{test_id}` ({test_name}): {text}" + (f" (CWE-{cwe})" if cwe else "")
    if defect is not None:
        body += f"\n\nClass: {defect.label}" + (
            f"; request input: {taint.reason}." if taint else "."
        )
    if defused is not None:
        body += f"\n\nLowered to {priority}: {defused.reason}."
    if more:
        body += f"\n\nDetails: {more}"
    why = f"bandit's own label maps to {tool_priority}"
    if defect is not None and unfloored:
        why += f"; the class floor of {defect.label} is not applied: {unfloored}"
    elif defect is not None:
        why += f"; the severity table classes {test_id} as {defect.label}, floor {floor}"
        if taint is not None:
            why += f" because {taint.reason}"
    if taint is not None and confidence > _BANDIT_CONFIDENCE.get(confidence_word.upper(), 0.4):
        why += f"; confidence raised to {confidence} by the visible request input"
    if defused is not None:
        why += f"; lowered because {defused.reason}"
    if defect is not None or defused is not None:
        why += f"; priority {priority}"
    return finding_payload(
        reasoning=(
            f"bandit {test_id} reports {severity} severity with {confidence_word} confidence on "
            f"lines the change adds ({start}-{end}); {why}."
        ),
        node_type=node_type,
        priority=priority,
        category=Category.SECURITY,
        path=path,
        lines=(start, end),
        confidence=confidence,
        title=f"{test_id}: {text}",
        body=body,
        fix_prompt=f"In {path} lines {start}-{end}: "
        + bandit_fix(test_id, defect, str(more or "")),
        exploitable=taint is not None,
    )


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
__all__ = [
    "BANDIT",
    "RUFF",
    "RUFF_RULES",
    "AnalyzerFinding",
    "AnalyzerResult",
    "AnalyzerReviewer",
    "added_lines",
    "bandit_mapping",
    "counted",
    "finding_payload",
    "grouped",
    "ruff_mapping",
    "run_bandit",
    "run_ruff",
    "source_targets",
    "tool_path",
]
