"""An offline reviewer for credentials committed in the change (no model, no network).

It reuses the redaction rules (reviews/domain/redaction.py) on the lines the change adds: what
we would refuse to send to a model provider should not be committed either. The finding names
the kind of secret, never its value. In test code a credential-shaped value is a fixture and is
not reported (the note counts them) unless it has a live format a provider issues
(reviews/domain/precision.py), which stays high wherever it is and, outside test code, is on
the high-precision list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reviews.agents.analyzers import (
    AnalyzerResult,
    AnalyzerReviewer,
    ToolMatch,
    added_lines,
    finding_payload,
    grouped,
    validated_result,
)
from reviews.domain.precision import (
    BLOCK_COMMENT_SUFFIXES,
    documentation_context,
    generated_code,
    high_precision,
    inside_block_comment,
    inside_triple_quotes,
    is_test_code,
    live_secret,
    placeholder_value,
    plausible_secret,
)
from reviews.domain.redaction import matched_values, redact
from reviews.domain.severity_floors import classify, floor_for
from reviews.domain.types import AxisName, Category, Dimension, NodeType, Priority
from reviews.sources.diffs import ChangedFile
from reviews.sources.worktrees import UnsafePath, safe_join

_KIND = re.compile(r"\[REDACTED:([a-z_]+)\]")


def _payload(path: str, line: int, kind: str, *, test_code: bool, live: bool) -> dict[str, Any]:
    label = kind.replace("_", " ")
    # Every kind is a hard-coded credential in the severity table (docs/analyzer-severities.md).
    priority = floor_for(classify(f"secrets:{kind}")) or Priority.P1
    body = "Move the value to the environment or a secret store." + (
        " Rotate it: a credential of this format is now in the repository's history."
        if live
        else ""
    )
    if test_code:
        body += " Test code is no exception: the value has the format of a live credential."
    return finding_payload(
        reasoning=f"The added line matches the {label} pattern used to keep secrets away "
        "from model providers; a committed credential is readable by everyone with the "
        "repository and stays in its history.",
        node_type=NodeType.BUG if priority.rank <= 1 else NodeType.RECOMMENDATION,
        priority=priority,
        category=Category.SECURITY,
        path=path,
        lines=(line, line),
        confidence=0.8,
        title=f"Credential committed in code ({label})",
        body=body,
        exploitable=priority.rank <= 1,
    )


def _checkout_lines(root: Path, path: str) -> list[str] | None:
    try:
        return safe_join(root, path).read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, UnsafePath):
        return None


def run_secret_scan(worktree: Path | str, changed_files: Sequence[ChangedFile]) -> AnalyzerResult:
    root = Path(worktree)
    # Bundles and vendored copies too: a credential there is shipped all the same.
    wanted = added_lines(changed_files, generated=True)
    by_path = {f.path: f for f in changed_files}
    matches: list[ToolMatch] = []
    fixtures = implausible = 0
    for path, lines in sorted(wanted.items()):
        # Large files too: "not for models" keeps them out of prompts, not out of this scan.
        changed = by_path[path]
        # The stored diff is already redacted: the checkout has the text as committed.
        checkout = _checkout_lines(root, path)
        test_code = is_test_code(path, "\n".join(checkout) if checkout is not None else None)
        # Built and vendored files: only a live format counts, as in tests (a bundle repeats
        # its sources' names, and a source map holds them all on one line).
        fixture_like = test_code or generated_code(path)
        for hunk in changed.hunks:
            for line in hunk.lines:
                if line.kind != "+" or line.new_line not in lines:
                    continue
                text = line.text
                if checkout is not None and line.new_line <= len(checkout):
                    text = checkout[line.new_line - 1]
                found = _line_match(path, line.new_line, text, checkout, test_code, fixture_like)
                if found == "fixture":
                    fixtures += 1  # test data, a URL parser's vectors, a bundle's copy
                elif found == "implausible":
                    implausible += 1  # `isCredentialsSupported = "credentials" in …`
                elif isinstance(found, ToolMatch):
                    matches.append(found)
    findings, folded = grouped("secrets", matches)
    notes = [
        "credential patterns; in test code, documentation, comments, docstrings and CI service "
        "definitions only live formats count",
        f"{fixtures} credential-shaped value(s) in test code or built files without a live "
        "format not reported"
        if fixtures
        else "",
        f"{implausible} name(s) that sound secret with a value that does not look like one "
        "(a word, an identifier, a template) not reported"
        if implausible
        else "",
        folded,
    ]
    return validated_result(
        "secrets", frozenset({Dimension.SECURITY}), findings, root, sorted(wanted), notes
    )


def _line_match(
    path: str,
    line_no: int,
    text: str,
    checkout: list[str] | None,
    test_code: bool,
    fixture_like: bool,
) -> ToolMatch | str | None:
    """One added line's credential as a `ToolMatch`; "fixture" or "implausible" when a rule
    sets it aside (counted in the notes); None when there is nothing to report."""
    redacted, count = redact(text)
    if not count:
        return None
    found = _KIND.search(redacted)
    kind = found.group(1) if found else "secret"
    live = live_secret(kind, text)
    # Kinds judged by a name (assignment, URL, entropy) need a value that could be
    # a secret; a provider's token format is evidence enough.
    values = matched_values(text, kind)
    in_text = bool(checkout) and (
        (path.endswith(".py") and inside_triple_quotes(checkout or [], line_no - 1))
        or (
            path.endswith(BLOCK_COMMENT_SUFFIXES)
            and inside_block_comment(checkout or [], line_no - 1)
        )
    )
    if not live and (documentation_context(path, text, in_text) or placeholder_value(values)):
        return None  # an example in documentation, a CI service's, or a placeholder
    if not live and fixture_like:
        return "fixture"
    plausible = not values or any(plausible_secret(v) for v in values)
    if not live and not plausible:
        return "implausible"
    evidence = {
        "tool": "secrets",
        "rule": f"secrets:{kind}",
        "high_precision": high_precision(defect=None, live_secret_format=live, test_code=test_code),
        "test_code": test_code,
    }
    payload = _payload(path, line_no, kind, test_code=test_code, live=live)
    return ToolMatch(kind, path, line_no, line_no, payload, evidence)


SECRETS = AnalyzerReviewer(
    name="secrets",
    dimensions=frozenset({Dimension.SECURITY}),
    axes=frozenset({AxisName.SECURITY}),
    run=run_secret_scan,
)
