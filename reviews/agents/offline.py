"""Every offline analyzer reviewer, by its stream's name: the one registry the pipeline runs
(reviews/pipeline/analyzer_runs.py), the benchmarks use and the tests exercise.

Adding one: its `AnalyzerReviewer` here with the scope its coverage note states, its agent name
in `ANALYZER_AGENTS` (reviews/domain/precision.py) and the reserved reviewer keys
(workspaces/services/reviewers.py), and a `ReviewerEntry` in reviews/pipeline/template.py;
tests/reviews/agents/test_offline_registry.py fails until all four agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from reviews.agents.analyzers import AnalyzerResult, AnalyzerReviewer
from reviews.agents.bandit_analyzer import BANDIT
from reviews.agents.js_analyzer import OXLINT
from reviews.agents.pattern_analyzer import PATTERNS
from reviews.agents.ruff_analyzer import RUFF, RUFF_RULES
from reviews.agents.secret_scan import SECRETS
from reviews.domain.types import Dimension
from reviews.sources.diffs import ChangedFile

ANALYZERS: dict[str, AnalyzerReviewer] = {
    "ruff": RUFF,
    "bandit": BANDIT,
    "secrets": SECRETS,
    "oxlint": OXLINT,
    "ast-grep": PATTERNS,
}
#: What each one's coverage note says it checked (its statement of coverage for its axes).
ANALYZER_SCOPES = {
    "ruff": "ruff rules " + ", ".join(RUFF_RULES) + ", or the repository's configuration",
    "bandit": "bandit's security tests",
    "secrets": "credential patterns (the redaction rules)",
    "oxlint": "oxlint's correctness rules, or the repository's lint configuration",
    "ast-grep": "Quorum's pattern rules (TLS checks, built SQL and shell commands, likely bugs)",
}


def run_all(worktree: Path | str, changed_files: Sequence[ChangedFile]) -> list[AnalyzerResult]:
    """Every analyzer over the change, in registry order; one failing never hides another."""
    return [analyzer.run(worktree, changed_files) for analyzer in ANALYZERS.values()]


def dimensions_covered(results: Iterable[AnalyzerResult]) -> frozenset[Dimension]:
    """Dimensions an analyzer actually ran for (a failed run covers nothing)."""
    covered: set[Dimension] = set()
    for result in results:
        if result.ok:
            covered |= result.dimensions
    return frozenset(covered)


__all__ = ["ANALYZERS", "ANALYZER_SCOPES", "dimensions_covered", "run_all"]
