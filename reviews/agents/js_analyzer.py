"""Oxlint as the offline reviewer of JavaScript and TypeScript: findings on the lines a change adds.

Oxlint is installed from PyPI with its binary (no network, no Node.js). It runs with the
repository's lint configuration where it has one (reviews/agents/js_lint_config.py), else with
its correctness rules less a few that judge style. `// eslint-disable…` and
`// oxlint-disable…` comments are honoured by oxlint itself.

Mapping (type, priority, category, confidence):
    correctness rule              → bug, P2, correctness, 0.7 (code that does not do what it says)
    no-unused-* (correctness)     → suggestion, P3, maintainability, 0.9
    any other rule the project on → suggestion, P3, maintainability, 0.6
In test code every finding is at most P3, and rules outside correctness that the project did not
turn on itself are not reported. Repeated hits of one rule in one file are one finding.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tempfile
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
from reviews.agents.js_lint_config import JsLintConfig, default_document, js_lint_config
from reviews.domain.precision import TEST_RULE_PRIORITY, is_test_code
from reviews.domain.types import (
    AxisName,
    Category,
    Dimension,
    NodeType,
    Priority,
)
from reviews.sources.diffs import ChangedFile

JS_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
OXLINT_TIMEOUT = 120.0
_CODE = re.compile(r"^(?:(?P<plugin>[\w-]+)\((?P<rule>[\w/-]+)\)|(?P<bare>[\w/-]+))$")


@functools.cache
def oxlint_categories() -> Mapping[str, str]:
    """Oxlint's rules (`plugin/rule` and bare `rule` for ESLint's core) by category."""
    try:
        proc = subprocess.run(
            [tool_path("oxlint"), "--rules", "--format", "json"],
            capture_output=True,
            timeout=60,
            check=True,
        )
        rules = json.loads(proc.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    table: dict[str, str] = {}
    for rule in rules if isinstance(rules, list) else ():
        scope, name = str(rule.get("scope") or ""), str(rule.get("value") or "")
        table[f"{scope}/{name}"] = str(rule.get("category") or "")
        if scope == "eslint":
            table[name] = str(rule.get("category") or "")
    return table


def rule_of(code: str) -> str:
    """`eslint(no-debugger)` → `no-debugger`; `typescript-eslint(no-x)` → `typescript/no-x`."""
    match = _CODE.match(code.strip())
    if not match:
        return code.strip() or "oxlint"
    if match["bare"]:
        return match["bare"]
    plugin = match["plugin"].removesuffix("-eslint").removeprefix("eslint-plugin-")
    return match["rule"] if plugin == "eslint" else f"{plugin}/{match['rule']}"


def oxlint_mapping(rule: str, category: str) -> tuple[NodeType, Priority, Category, float]:
    short = rule.rsplit("/", 1)[-1]
    if category == "correctness" and short.startswith("no-unused"):
        return NodeType.SUGGESTION, Priority.P3, Category.MAINTAINABILITY, 0.9
    if category == "correctness":
        return NodeType.BUG, Priority.P2, Category.CORRECTNESS, 0.7
    return NodeType.SUGGESTION, Priority.P3, Category.MAINTAINABILITY, 0.6


def run_oxlint(
    worktree: Path | str, changed_files: Sequence[ChangedFile], *, timeout: float = OXLINT_TIMEOUT
) -> AnalyzerResult:
    """Oxlint findings on added lines of changed JavaScript/TypeScript files."""
    root = Path(os.path.realpath(worktree))
    dims = OXLINT.dimensions
    targets = source_targets(root, changed_files, JS_SUFFIXES)
    if not targets:
        return AnalyzerResult(reviewer="oxlint", dimensions=dims)
    paths = sorted(targets)
    config = js_lint_config(root)
    found = _oxlint_diagnostics(root, paths, config, timeout)
    if isinstance(found, str) and config.source:
        config = JsLintConfig(
            default_document(),
            refused=f"oxlint could not use {config.source}: {found[:160]}",
        )
        found = _oxlint_diagnostics(root, paths, config, timeout)
    if isinstance(found, str):
        return AnalyzerResult("oxlint", dims, error=found)
    categories = oxlint_categories()
    matches: list[ToolMatch] = []
    tests: dict[str, bool] = {}
    quiet = 0
    for item in found:
        path = relative_path(root, str(item.get("filename", "")))
        lines = [
            label["span"]["line"]
            for label in item.get("labels") or ()
            if isinstance((label.get("span") or {}).get("line"), int)
        ]
        if path not in targets or not lines or lines[0] not in targets[path]:
            continue
        rule = rule_of(str(item.get("code") or ""))
        category = categories.get(rule, "")
        if path not in tests:
            tests[path] = is_test_code(path)
        if tests[path] and category != "correctness" and not config.asks_for(rule):
            quiet += 1
            continue
        start, end = lines[0], max(lines)
        payload = _payload(path, item, rule, category, start, end, test_code=tests[path])
        evidence = {
            "tool": "oxlint",
            "rule": rule,
            "high_precision": False,
            "test_code": tests[path],
        }
        matches.append(ToolMatch(rule, path, start, end, payload, evidence))
    findings, folded = grouped("oxlint", matches)
    notes = [
        config.describe(tuple(f.path for f in changed_files)) + "; disable comments honoured",
        counted(quiet, "match", "of rules the project did not ask for in test code not reported"),
        folded,
    ]
    return validated_result("oxlint", dims, findings, root, paths, notes)


def _oxlint_diagnostics(
    root: Path, paths: list[str], config: JsLintConfig, timeout: float
) -> list[dict[str, Any]] | str:
    # The configuration is always ours to write, outside the checkout: oxlint never loads a
    # file of the checkout by itself (--disable-nested-config), only what was vetted.
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="quorum-oxlint-") as handle:
        json.dump(config.document, handle)
        handle.flush()
        argv = [
            tool_path("oxlint"),
            "--config",
            handle.name,
            "--disable-nested-config",
            "--format",
            "json",
        ]

        def parse(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]] | str:
            try:
                report = json.loads(proc.stdout or b"{}")
            except ValueError:
                return tool_failure("oxlint", proc)
            if not isinstance(report, dict) or not isinstance(report.get("diagnostics"), list):
                return tool_failure("oxlint", proc)
            return [d for d in report["diagnostics"] if isinstance(d, dict)]

        return run_chunked("oxlint", argv, paths, root, timeout, parse)


def _payload(
    path: str,
    item: Mapping[str, Any],
    rule: str,
    category: str,
    start: int,
    end: int,
    *,
    test_code: bool,
) -> dict[str, Any]:
    node_type, priority, triage_category, confidence = oxlint_mapping(rule, category)
    lowered = ""
    if test_code and priority.rank < TEST_RULE_PRIORITY.rank:
        node_type, priority = NodeType.SUGGESTION, TEST_RULE_PRIORITY
        lowered = "; at most P3 in test code"
    message = str(item.get("message") or rule).strip()
    help_text = str(item.get("help") or "").strip()
    url = str(item.get("url") or "")
    body = f"oxlint `{rule}`: {message}" + (f"\n\n{help_text}" if help_text else "")
    if url:
        body += f"\n\nRule: {url}"
    return finding_payload(
        reasoning=(
            f"oxlint rule {rule} ({category or 'unlisted'}) reports this on line {start}, which "
            f"the change adds; mapped to {priority} {node_type} by the analyzer table{lowered}."
        ),
        node_type=node_type,
        priority=priority,
        category=triage_category,
        path=path,
        lines=(start, end),
        confidence=confidence,
        title=f"{rule}: {message}",
        body=body,
        fix_prompt=f"In {path} line {start}: {help_text or message}",
    )


OXLINT = AnalyzerReviewer(
    name="oxlint",
    dimensions=frozenset({Dimension.QUALITY}),
    axes=frozenset({AxisName.CORRECTNESS}),
    run=run_oxlint,
)

__all__ = ["JS_SUFFIXES", "OXLINT", "oxlint_mapping", "rule_of", "run_oxlint"]
