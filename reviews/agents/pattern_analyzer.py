"""ast-grep with Quorum's own rules: the offline reviewer for Go, Rust, Java, JavaScript and
TypeScript beside the linters.

ast-grep is installed from PyPI with its binary and its grammars built in (nothing is
downloaded). The rules live in `reviews/agents/pattern_rules/rules/`, one file per language,
written for precision: each matches one shape that is wrong wherever it appears (a TLS check
switched off with a literal `true`, SQL text assembled from a literal that starts a statement,
a shell running a built command line, Java deserializing objects, a discarded `append`, a String
compared by reference).
Each rule has a positive and a negative case in tests/reviews/agents/test_pattern_analyzer.py.

A security rule names its CWE (`metadata.cwe`), which gives its defect class and so the class
floor (reviews/domain/severity_floors.py): at least P1, outside test code. A pattern match is
evidence for its axis, never on the high-precision list: it can hold a change, and needs a
model, a verifier or a person to block it. In test code the security rules are silent (a test
server with a self-signed certificate, a fixture query: the note counts them) and a correctness
finding is at most P3.
"""

from __future__ import annotations

import json
import os
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
    source_targets,
    tool_failure,
    tool_path,
    validated_result,
)
from reviews.agents.js_analyzer import JS_SUFFIXES
from reviews.domain.precision import TEST_RULE_PRIORITY, is_test_code
from reviews.domain.severity_floors import classify, floor_for
from reviews.domain.types import (
    AxisName,
    Category,
    Dimension,
    NodeType,
    Priority,
)
from reviews.sources.diffs import ChangedFile

RULES_CONFIG = Path(__file__).with_name("pattern_rules") / "sgconfig.yml"
PATTERN_SUFFIXES = (".go", ".rs", ".java", *JS_SUFFIXES)
PATTERN_TIMEOUT = 120.0
SECURITY_CONFIDENCE = 0.7
CORRECTNESS_CONFIDENCE = 0.8


def run_patterns(
    worktree: Path | str,
    changed_files: Sequence[ChangedFile],
    *,
    timeout: float = PATTERN_TIMEOUT,
) -> AnalyzerResult:
    """Quorum's ast-grep rules on added lines of changed Go, Rust, Java, JS and TS files."""
    root = Path(os.path.realpath(worktree))
    dims = PATTERNS.dimensions
    targets = source_targets(root, changed_files, PATTERN_SUFFIXES)
    if not targets:
        return AnalyzerResult(reviewer="ast-grep", dimensions=dims)
    paths = sorted(targets)
    # Our configuration, never one of the checkout's (a repository's sgconfig.yml can load
    # parsers from shared libraries).
    argv = [
        tool_path("ast-grep"),
        "scan",
        "--config",
        str(RULES_CONFIG),
        "--json=stream",
        "--include-metadata",
    ]

    def parse(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]] | str:
        # Exit 1 means error-level matches; anything that is not a JSON line is a failure.
        if proc.returncode not in (0, 1):
            return tool_failure("ast-grep", proc)
        found = []
        for line in proc.stdout.splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                return "ast-grep printed a line that is not JSON"
            if isinstance(item, dict):
                found.append(item)
        return found

    found = run_chunked("ast-grep", argv, paths, root, timeout, parse)
    if isinstance(found, str):
        return AnalyzerResult("ast-grep", dims, error=found)
    matches: list[ToolMatch] = []
    tests: dict[str, bool] = {}
    in_tests = 0
    for item in found:
        path = relative_path(root, str(item.get("file", "")))
        span = item.get("range") or {}
        start = (span.get("start") or {}).get("line")
        end = (span.get("end") or {}).get("line", start)
        if path not in targets or not isinstance(start, int) or not isinstance(end, int):
            continue
        start, end = start + 1, max(start, end) + 1  # ast-grep counts lines from 0
        if not any(n in targets[path] for n in range(start, end + 1)):
            continue
        if path not in tests:
            tests[path] = is_test_code(path)
        rule = str(item.get("ruleId") or "ast-grep")
        if tests[path] and (item.get("metadata") or {}).get("kind") == "security":
            in_tests += 1
            continue
        payload = _payload(path, item, rule, start, end, test_code=tests[path])
        evidence = {
            "tool": "ast-grep",
            "rule": rule,
            "high_precision": False,
            "test_code": tests[path],
        }
        matches.append(ToolMatch(rule, path, start, end, payload, evidence))
    findings, folded = grouped("ast-grep", matches)
    notes = [
        "ast-grep: Quorum's rules for Go, Rust, Java, JavaScript and TypeScript",
        counted(in_tests, "match", "of security rules in test code not reported"),
        folded,
    ]
    return validated_result("ast-grep", dims, findings, root, paths, notes)


def _payload(
    path: str, item: Mapping[str, Any], rule: str, start: int, end: int, *, test_code: bool
) -> dict[str, Any]:
    metadata = item.get("metadata") or {}
    cwe = metadata.get("cwe") if isinstance(metadata.get("cwe"), int) else None
    defect = classify(None, cwe) if cwe is not None else None
    if defect is not None:
        node_type, category, confidence = NodeType.BUG, Category.SECURITY, SECURITY_CONFIDENCE
        priority = floor_for(defect) or Priority.P1
        why = f"its class is {defect.label} (CWE-{cwe}), whose floor is {priority}"
    else:
        node_type, category = NodeType.BUG, Category.CORRECTNESS
        confidence, priority = CORRECTNESS_CONFIDENCE, Priority.P2
        why = "a correctness rule maps to P2"
    if test_code and priority.rank < TEST_RULE_PRIORITY.rank:
        node_type, priority = NodeType.RECOMMENDATION, TEST_RULE_PRIORITY
        why += "; at most P3 in test code"
    message = str(item.get("message") or rule).strip()
    note = str(item.get("note") or "").strip()
    body = f"ast-grep rule `{rule}`: {message}" + (f"\n\n{note}" if note else "")
    if defect is not None:
        body += f"\n\nClass: {defect.label}."
    return finding_payload(
        reasoning=(
            f"Quorum's pattern rule {rule} matches lines {start}-{end}, which the change adds; "
            f"{why}; priority {priority}."
        ),
        node_type=node_type,
        priority=priority,
        category=category,
        path=path,
        lines=(start, end),
        confidence=confidence,
        title=f"{rule}: {message}",
        body=body,
        fix_prompt=f"In {path} lines {start}-{end}: {note or message}",
        exploitable=False,
    )


PATTERNS = AnalyzerReviewer(
    name="ast-grep",
    dimensions=frozenset({Dimension.SECURITY, Dimension.QUALITY}),
    axes=frozenset({AxisName.SECURITY, AxisName.CORRECTNESS}),
    run=run_patterns,
)

__all__ = ["PATTERNS", "PATTERN_SUFFIXES", "RULES_CONFIG", "run_patterns"]
