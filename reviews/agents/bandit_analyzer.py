"""The bandit analyzer reviewer: bandit's security findings on the lines a change adds, mapped to
nodes. Split from analyzers, which holds what every analyzer shares (results, changed lines,
running a tool, payloads).

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
- `# nosec` is applied by us, so a `# nosec` cannot silence a finding on the high-precision
  list and the silenced ones are counted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
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
    bandit_config,
    excluded,
    nosec_silences,
)
from reviews.domain.analyzer_fixes import bandit_fix
from reviews.domain.precision import (
    PRODUCTION_ONLY_RULES,
    Defused,
    defusing_context,
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
)
from reviews.sources.diffs import ChangedFile

BANDIT_TIMEOUT = 120.0


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

    matches, skipped = _bandit_matches(root, results, targets, changed_files)
    findings, folded = grouped("bandit", matches)
    notes = [
        config.describe("bandit", [f.path for f in changed_files]),
        counted(skipped["in_tests"], "match", "of production-only rules in test code not reported"),
        counted(skipped["silenced"], "match", "silenced by # nosec"),
        counted(skipped["narrowing"], "assert", "narrowing a type not reported (B101)"),
        counted(
            skipped["no_value"],
            "match",
            "of credential rules on None or an empty string not reported",
        ),
        folded,
    ]
    return validated_result("bandit", dims, findings, root, paths, notes)


def _bandit_matches(
    root: Path,
    results: list[dict[str, Any]],
    targets: Mapping[str, frozenset[int]],
    changed_files: Sequence[ChangedFile],
) -> tuple[list[ToolMatch], Counter[str]]:
    """Bandit's matches on lines the change adds that the precision rules keep, and how many
    each rule set aside (`in_tests`, `narrowing`, `no_value`, `silenced`)."""
    change_lines = [
        line.text
        for changed in changed_files
        for hunk in changed.hunks
        for line in hunk.lines
        if line.kind == "+"
    ]
    sources: dict[str, list[str]] = {}
    skipped: Counter[str] = Counter()
    matches: list[ToolMatch] = []
    for item in results:
        path = relative_path(root, str(item.get("filename", "")))
        line = item.get("line_number")
        if path not in targets or not isinstance(line, int):
            continue
        span = [n for n in item.get("line_range") or [line] if isinstance(n, int)] or [line]
        # A multi-line statement counts as changed when any of its lines is added.
        if not any(n in targets[path] for n in span):
            continue
        if path not in sources:
            sources[path] = source_lines(root, path)
        found = _bandit_match(item, path, span, line, sources[path], targets[path], change_lines)
        if isinstance(found, str):
            skipped[found] += 1
        else:
            matches.append(found)
    return matches, skipped


def _bandit_match(
    item: Mapping[str, Any],
    path: str,
    span: list[int],
    line: int,
    lines: list[str],
    added: frozenset[int],
    change_lines: list[str],
) -> ToolMatch | str:
    """One match on added lines as a `ToolMatch`, or the name of the rule that sets it aside."""
    start, end = min(*span, line), max(*span, line)
    rule = str(item.get("test_id") or "bandit")
    test_code = is_test_code(path, "\n".join(lines))
    if test_code and rule in PRODUCTION_ONLY_RULES:
        return "in_tests"
    if rule == "B101" and narrowing_assert(lines, start, end):
        return "narrowing"
    defect = classify(rule, _cwe(item))
    if defect is DefectClass.HARDCODED_CREDENTIAL and _NO_VALUE.search(
        str(item.get("issue_text") or "")
    ):
        return "no_value"  # `TOKEN = None`, `password = ""`: a name with nothing in it
    taint = None
    if defect is not None:
        taint = request_input(lines, start, end, added=added, change_lines=change_lines)
    precise = high_precision(defect=defect, request_input=taint is not None)
    if not precise and nosec_silences(lines, span, rule, str(item.get("test_name") or "")):
        return "silenced"
    defused = None
    if taint is None:
        defused = defusing_context(
            rule, lines, start, end, tool_severity=str(item.get("issue_severity") or "")
        )
    payload = _bandit_payload(path, item, start, end, defect=defect, taint=taint, defused=defused)
    evidence: dict[str, Any] = {
        "tool": "bandit",
        "rule": rule,
        "high_precision": precise,
        "test_code": test_code,
    }
    if defused is not None:
        evidence["defused"] = defused.reason
    return ToolMatch(rule, path, start, end, payload, evidence)


def _bandit_results(
    root: Path, paths: list[str], config: ToolConfig, timeout: float
) -> list[dict[str, Any]] | str:
    """Bandit's JSON results for `paths`, or why bandit failed. `--ignore-nosec`: the
    comments are read by `nosec_silences`, which keeps the high-precision findings."""
    argv = [*tool_command("bandit"), "-f", "json", "-q", "--ignore-nosec", *config.args]

    def parse(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]] | str:
        try:
            report = json.loads(proc.stdout or b"{}")
        except ValueError:
            return tool_failure("bandit", proc)
        if proc.returncode not in (0, 1) or not isinstance(report, dict):
            return tool_failure("bandit", proc)
        return list(report.get("results") or [])

    return run_chunked("bandit", argv, paths, root, timeout, parse)


def _cwe(item: Mapping[str, Any]) -> int | None:
    cwe = (item.get("issue_cwe") or {}).get("id")
    return cwe if isinstance(cwe, int) else None


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
    unfloored = _unfloored(defect, floor, taint, confidence_word, literal)
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
    why = _priority_reasons(
        test_id,
        tool_priority,
        priority,
        floor,
        unfloored,
        confidence=confidence,
        confidence_word=confidence_word,
        defect=defect,
        taint=taint,
        defused=defused,
    )
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


def _unfloored(
    defect: DefectClass | None,
    floor: Priority | None,
    taint: Taint | None,
    confidence_word: str,
    literal: re.Match[str] | None,
) -> str:
    """Why the class floor does not apply to this match, or "" when it does."""
    if floor is not None and taint is None and confidence_word.upper() == "LOW":
        return "bandit itself is unsure of the match (LOW confidence)"
    if (
        defect is DefectClass.HARDCODED_CREDENTIAL
        and literal is not None
        and not plausible_secret(literal.group(0)[1:-1])
    ):
        return "the literal does not look like a secret (empty, a word or a template)"
    return ""


def _priority_reasons(
    test_id: str,
    tool_priority: Priority,
    priority: Priority,
    floor: Priority | None,
    unfloored: str,
    *,
    confidence: float,
    confidence_word: str,
    defect: DefectClass | None,
    taint: Taint | None,
    defused: Defused | None,
) -> str:
    """The reasoning's account of how bandit's label became the finding's priority."""
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
    return why


BANDIT = AnalyzerReviewer(
    name="bandit",
    dimensions=frozenset({Dimension.SECURITY}),
    axes=frozenset({AxisName.SECURITY}),
    run=run_bandit,
)
