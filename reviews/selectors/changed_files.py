"""Selectors for the diff as a working surface: the round's changed files as a tree with each
person's viewed marks, and which findings the cohort previews show at their lines.

Everything a cohort's previews need is a mapping looked up by path or (path, line), so one
cohort's previews can be rendered alone with the same context.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reviews.domain.file_tree import (
    FileFacts,
    file_tree,
    file_view_key,
    is_shown,
    preview_anchor,
    shown_lines,
)
from reviews.domain.round_stats import CohortSummary
from reviews.models import FileViewed, ReviewNode, ReviewRound, ReviewSpace
from reviews.sources.diffs import ChangedFile, DiffParseError, parse_unified_diff


def file_summaries(files: Iterable[ChangedFile]) -> list[dict[str, Any]]:
    """What the prepare stage stores per changed file (RoundStats.files): the tree's facts and
    the content key, so the page never parses the diff again."""
    return [
        {
            "path": f.path,
            "change": str(f.status),
            "additions": f.additions,
            "deletions": f.deletions,
            "key": file_view_key(f.path, [h.text for h in f.hunks], blob=f.blob),
            "old_path": f.old_path,
        }
        for f in files
    ]


# Rounds prepared before RoundStats.files existed: their diff is parsed once per process.
# A round's stored diff is written once (prepare), so (round id, diff length) names it.
_PARSED: dict[tuple[int, int], list[FileFacts]] = {}
_PARSED_MAX = 32


def _facts_from_diff(review_round: ReviewRound) -> list[FileFacts]:
    cache_key = (review_round.pk, len(review_round.diff))
    found = _PARSED.get(cache_key)
    if found is None:
        try:
            summaries = file_summaries(parse_unified_diff(review_round.diff))
        except DiffParseError:
            summaries = []
        found = [FileFacts(**s) for s in summaries]
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[cache_key] = found
    return found


def round_file_facts(review_round: ReviewRound | None) -> list[FileFacts]:
    """Every file the round's diff changes (none before the diff is fetched)."""
    if review_round is None:
        return []
    stored = review_round.stats.files
    if stored is not None:
        return [FileFacts(**f.model_dump()) for f in stored]
    return _facts_from_diff(review_round) if review_round.diff else []


def findings_in_previews(
    nodes: Iterable[ReviewNode], cohorts: Sequence[CohortSummary]
) -> dict[tuple[str, int], list[ReviewNode]]:
    """(path, line) → the canonical findings anchored there, for lines a preview shows."""
    ranges = shown_lines(
        (p.path, h.new_start, h.new_count) for c in cohorts for p in c.previews for h in p.hunks
    )
    out: dict[tuple[str, int], list[ReviewNode]] = {}
    for node in nodes:
        if (
            node.duplicate_of_id is None
            and node.path
            and node.start_line
            and is_shown(ranges, node.path, node.start_line)
        ):
            out.setdefault((node.path, node.start_line), []).append(node)
    return out


def diff_surface(
    *,
    user_id: int,
    space: ReviewSpace,
    review_round: ReviewRound | None,
    nodes: Sequence[ReviewNode],
    cohorts: Sequence[CohortSummary],
    findings_per_path: Mapping[str, int],
    rendered_lines: set[tuple[str, int]],
) -> dict[str, Any]:
    """The review page's file tree, inline findings and viewed marks for one person (one
    query for the marks). `rendered_lines` are the lines of the previews this page renders:
    a finding there has its card in the diff (`inline_node_ids`), any other in the list."""
    facts = round_file_facts(review_round)
    findings_at = {
        at: found
        for at, found in findings_in_previews(nodes, cohorts).items()
        if at in rendered_lines
    }
    anchors: dict[str, str] = {}
    for cohort in cohorts:
        for preview in cohort.previews:
            anchors.setdefault(preview.path, preview_anchor(cohort.key, preview.path))
    # A round with no changed file has nothing to mark: no query for the marks.
    viewed_keys = (
        set(
            FileViewed.objects.filter(user_id=user_id, space=space).values_list(
                "file_key", flat=True
            )
        )
        if facts
        else set()
    )
    tree = file_tree(
        facts,
        findings_per_path=findings_per_path,
        viewed_keys=viewed_keys,
        anchors=anchors,
    )
    return {
        "file_tree": tree,
        "findings_at": findings_at,
        "inline_node_ids": {n.pk for found in findings_at.values() for n in found},
        "viewed_paths": {f.path for f in tree.files if f.viewed},
    }
