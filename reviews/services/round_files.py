"""A round's changed files as the pipeline reads them: the diff, with what the repository's
`.gitattributes` says is vendored or generated (read by prepare from the head, kept in the
round's stats) laid over what the path and content say (reviews/domain/vendored.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reviews.domain import vendored
from reviews.models import ReviewRound
from reviews.sources.diffs import ChangedFile, parse_unified_diff

_OWN_REASONS = frozenset({"binary", "large"})  # what no attribute changes


def attribute_verdicts(root: Path, files: list[ChangedFile]) -> dict[str, str]:
    """For each changed file the head's `.gitattributes` speaks of: its kind, or "" when it
    keeps the file in (`-linguist-vendored`)."""
    try:
        text = (root / ".gitattributes").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    rules = vendored.attribute_rules(text)
    said = {f.path: vendored.attribute_reason(f.path, rules) for f in files} if rules else {}
    return {
        path: kind if isinstance(kind, str) else ""
        for path, kind in said.items()
        if kind is not None
    }


def round_changed_files(review_round: ReviewRound) -> list[ChangedFile]:
    return with_verdicts(parse_unified_diff(review_round.diff), review_round.stats.vendored)


def with_verdicts(files: list[ChangedFile], said: dict[str, str] | None) -> list[ChangedFile]:
    """The diff's files with what `.gitattributes` said of them (`attribute_verdicts`)."""
    said = said or {}
    return [_as_said(f, said[f.path]) if f.path in said else f for f in files]


def _as_said(changed: ChangedFile, kind: str) -> ChangedFile:
    if changed.not_for_models_reason in _OWN_REASONS:
        return changed
    return replace(changed, not_for_models=bool(kind), not_for_models_reason=kind or None)
