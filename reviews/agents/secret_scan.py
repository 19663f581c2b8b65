"""An offline reviewer for credentials committed in the change (no model, no network).

It reuses the redaction rules (reviews/agents/redaction.py) on the lines the change adds: what
we would refuse to send to a model provider should not be committed either. The finding names
the kind of secret, never its value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reviews.agents.analyzers import AnalyzerResult, _validated, added_lines
from reviews.agents.redaction import redact
from reviews.domain.severity_floors import classify, floor_for
from reviews.domain.types import Dimension, Priority, severity_for_priority
from reviews.sources.diffs import ChangedFile
from reviews.sources.worktrees import UnsafePath, safe_join

_KIND = re.compile(r"\[REDACTED:([a-z_]+)\]")


def _payload(path: str, line: int, kind: str) -> dict[str, Any]:
    label = kind.replace("_", " ")
    # Every kind is a hard-coded credential in the severity table (docs/analyzer-severities.md).
    priority = floor_for(classify(f"secrets:{kind}")) or Priority.P1
    return {
        "reasoning": f"The added line matches the {label} pattern used to keep secrets away "
        "from model providers; a committed credential is readable by everyone with the "
        "repository and stays in its history.",
        "type": "bug",
        "priority": str(priority),
        "triage": {
            "category": "security",
            "severity": str(severity_for_priority(priority)),
            "effort": "small",
            "exploitable_externally": True,
        },
        "anchor": {"path": path, "start_line": line, "end_line": line},
        "confidence": 0.8,
        "title": f"Credential committed in code ({label})",
        "body": "Move the value to the environment or a secret store, and rotate it: it is "
        "now in the repository's history.",
    }


def _checkout_lines(root: Path, path: str) -> list[str] | None:
    try:
        return safe_join(root, path).read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, UnsafePath):
        return None


def run_secret_scan(worktree: Path | str, changed_files: Sequence[ChangedFile]) -> AnalyzerResult:
    root = Path(worktree)
    wanted = added_lines(changed_files)
    by_path = {f.path: f for f in changed_files}
    raw = []
    for path, lines in sorted(wanted.items()):
        changed = by_path[path]
        if changed.not_for_models:
            continue
        # The stored diff is already redacted: the checkout has the text as committed.
        checkout = _checkout_lines(root, path)
        for hunk in changed.hunks:
            for line in hunk.lines:
                if line.kind != "+" or line.new_line not in lines:
                    continue
                text = line.text
                if checkout is not None and line.new_line <= len(checkout):
                    text = checkout[line.new_line - 1]
                redacted, count = redact(text)
                if count:
                    kind = _KIND.search(redacted)
                    raw.append(_payload(path, line.new_line, kind.group(1) if kind else "secret"))
    return _validated("secrets", frozenset({Dimension.SECURITY}), raw, root, sorted(wanted))
