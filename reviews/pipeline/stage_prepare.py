"""The prepare stage: the diff (redacted), the classification, the reviewers the tier or the
adaptive selection calls for, the worktree and the change map."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import cast

from reviews.agents.js_analyzer import JS_SUFFIXES
from reviews.agents.pattern_analyzer import PATTERN_SUFFIXES
from reviews.domain import types as t
from reviews.domain import vendored
from reviews.domain.classification import (
    ChangeClassification,
    ChangeStatus,
    FileChange,
    classify_change,
)
from reviews.domain.redaction import redact_diff
from reviews.domain.round_stats import PanelModeName, RoundFacts, stage_timings
from reviews.domain.selection import select_reviewers
from reviews.domain.tiers import security_host
from reviews.index.cohorts import compute_cohorts
from reviews.models import ReviewerStream, ReviewRound
from reviews.pipeline import analyzer_runs, budget_runs, inputs, round_reads
from reviews.pipeline.template import (
    ConfiguredReviewer,
    ReviewerEntry,
    disabled_keys,
    disabled_reviewers,
    reviewers_for,
)
from reviews.selectors.changed_files import file_summaries
from reviews.services import codeindex
from reviews.services.round_files import attribute_verdicts, with_verdicts
from reviews.sources.diffs import ChangedFile, parse_unified_diff
from reviews.sources.worktrees import unread_files
from workspaces.models import Workspace, workspace_model_configured
from workspaces.rules import base_agent_checks_requirements

_STATUS = {
    "added": ChangeStatus.ADDED,
    "deleted": ChangeStatus.DELETED,
    "renamed": ChangeStatus.RENAMED,
    "binary": ChangeStatus.MODIFIED,
}


def changed_files(review_round: ReviewRound) -> list[ChangedFile]:
    return parse_unified_diff(review_round.diff)


def _file_changes(files: list[ChangedFile]) -> list[FileChange]:
    return [
        FileChange(
            path=f.path,
            added=f.additions,
            removed=f.deletions,
            status=_STATUS.get(str(f.status), ChangeStatus.MODIFIED),
            old_path=f.old_path,
        )
        for f in files
    ]


def prepare(review_round: ReviewRound) -> None:
    # The space's status followed the round into RUNNING (round_transition) just before.
    space = review_round.space
    # What prepare learns is saved in two statements: the diff with the facts, then the
    # cohorts with the reviewers the budgets leave (within a move, in the statement that
    # records prepare done). A prepare that stops between runs again.
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    fetched = not review_round.diff
    if fetched:
        # Stored, shown (cohort previews) and exported: a committed secret stops here. The
        # analyzers read the checkout, so the secret scanner still sees what was committed.
        review_round.diff = redact_diff(inputs.fetch_diff(review_round))
    files = changed_files(review_round)
    seconds["diff"], clock = time.perf_counter() - clock, time.perf_counter()
    classification = classify_change(
        _file_changes(files),
        review_round.diff,
        set_aside={f.path for f in files if f.not_for_models_reason in vendored.KINDS},
    )
    seconds["classification"] = time.perf_counter() - clock
    model_ready = workspace_model_configured(space.workspace)
    facts = _round_facts(review_round, files, classification, model_ready=model_ready)
    configured = configured_reviewers(space.workspace)
    entries = _save_facts(review_round, facts, classification, configured, files, fetched=fetched)
    if not facts.fast_exit:
        _read_worktree(review_round, files, seconds)
    clock = time.perf_counter()
    # Within the token budgets (round and pull request), with the change map in the briefs.
    entries = budget_runs.plan_reviewers(
        review_round,
        entries,
        configured,
        files,
        high_risk=bool(classification.risks),
        model_ready=model_ready,
        analyzers=analyzer_runs.ANALYZERS,
    )
    seconds["planning"] = time.perf_counter() - clock
    review_round.stats = review_round.stats.with_(
        reviewers=[e.key for e in entries],
        timings=stage_timings(review_round.stats.timings, "prepare", seconds),
    )
    if "security" not in disabled_keys(configured):  # switched off: nobody checks it for it
        host = security_host(
            [
                (e.key, _dimension(e.dimension))
                for e in entries
                if e.key not in analyzer_runs.ANALYZERS
            ],
            high_risk=model_ready and bool(classification.risks),
        )
        facts.security_check = [host] if host else None
    round_reads.save_learned(review_round)
    _create_streams(review_round, entries)


def _round_facts(
    review_round: ReviewRound,
    files: list[ChangedFile],
    classification: ChangeClassification,
    *,
    model_ready: bool,
) -> RoundFacts:
    """What the gates read about the round, with the adaptive tier's selection."""
    workspace = review_round.space.workspace
    facts = RoundFacts(
        tier=review_round.tier,
        fast_exit=classification.fast_exit is not None,
        model_configured=model_ready,
        python_changed=_any_changed(files, (".py",)),
        js_changed=_any_changed(files, JS_SUFFIXES),
        patterns_changed=_any_changed(files, PATTERN_SUFFIXES),
        panel_mode=cast(PanelModeName, workspace.panel_mode),
        followup=False,
    )
    if review_round.tier == t.Tier.ADAPTIVE:
        selection = select_reviewers(classification)
        facts.selected = [
            (_reviewer_key(spec), spec.dimension.value) for spec in selection.reviewers
        ]
        facts.selection_rationale = list(selection.rationale)
        # The combined trivial-change reviewer keeps its requirements check into the brief.
        facts.requirements_check = [
            _reviewer_key(spec) for spec in selection.reviewers if spec.with_requirements_check
        ]
    return facts


def _save_facts(
    review_round: ReviewRound,
    facts: RoundFacts,
    classification: ChangeClassification,
    configured: list[ConfiguredReviewer],
    files: list[ChangedFile],
    *,
    fetched: bool,
) -> list[ReviewerEntry]:
    """The reviewers the gates call for, saved with the facts, the classification and the
    diff when it was fetched (the first of prepare's two statements)."""
    gates = facts.for_gates()
    entries = [] if facts.fast_exit else reviewers_for(gates, configured)
    disabled = [] if facts.fast_exit else disabled_reviewers(gates, configured)
    facts.requirements_check = [e.key for e in entries if e.requirements_check] or None
    review_round.facts = facts
    review_round.stats = review_round.stats.with_(
        classification={
            "fast_exit": classification.fast_exit,
            "size": classification.size,
            "files": classification.file_count,
            "changed_lines": classification.changed_lines,
            "risks": [{"pattern": r.pattern, "where": r.where} for r in classification.risks],
        },
        reviewers=[e.key for e in entries],
        reviewers_disabled=[e.key for e in disabled],
        files=file_summaries(files),
        not_covered_by_model=[]
        if facts.model_configured
        else ["no model configured: only offline analyzers ran"],
    )
    review_round.save(update_fields=["facts", "stats", *(["diff"] if fetched else [])])
    return entries


def _read_worktree(
    review_round: ReviewRound, files: list[ChangedFile], seconds: dict[str, float]
) -> None:
    """The checkout and what is read from it: the vendored files its `.gitattributes` names,
    the cohorts (over the indexes, built while a local repository's checkout is made) and the
    files it could not read. `seconds["worktree"]` is the wait for the checkout beyond that."""
    clock = time.perf_counter()
    checkout = inputs.round_worktree_begun(review_round)
    try:
        base, head = codeindex.indexes_or_none(review_round, checkout, files)
    except BaseException:
        with contextlib.suppress(Exception):
            checkout()  # not left writing a checkout while the round's failure is handled
        raise
    seconds["index"], clock = time.perf_counter() - clock, time.perf_counter()
    worktree = checkout()
    seconds["worktree"], clock = time.perf_counter() - clock, time.perf_counter()
    said = attribute_verdicts(worktree, files)
    cohorts = compute_cohorts(with_verdicts(files, said), head, base=base)
    seconds["cohorts"] = time.perf_counter() - clock
    review_round.stats = review_round.stats.with_(
        vendored=said or None,
        cohorts=codeindex.cohorts_json(cohorts),
        unread_files=unread_files(worktree) or None,
    )


def _create_streams(review_round: ReviewRound, entries: list[ReviewerEntry]) -> None:
    """One insert whatever the number of reviewers; a re-run prepare adds only the streams it
    lacks (a stream's name is unique in its round: the ones it has keep their columns, but
    their agent, the same). Every stream comes back with its id, for the reviewers' steps."""
    streams = ReviewerStream.objects.bulk_create(
        [
            ReviewerStream(
                round=review_round,
                name=entry.key,
                agent=entry.key,
                dimension=entry.dimension,
                kind=ReviewerStream.Kind.ANALYZER
                if entry.key in analyzer_runs.ANALYZERS
                else ReviewerStream.Kind.MODEL,
            )
            for entry in dict((e.key, e) for e in entries).values()
        ],
        update_conflicts=True,
        unique_fields=["round", "name"],
        update_fields=["agent"],
    )
    round_reads.keep_prepared(review_round, streams)


def _any_changed(files: Sequence[ChangedFile], suffixes: tuple[str, ...]) -> bool:
    return any(f.path.endswith(suffixes) and not f.is_binary and f.new_path for f in files)


def _dimension(value: str) -> t.Dimension:
    try:
        return t.Dimension(value)
    except ValueError:  # a custom reviewer's unknown base: it reviews quality
        return t.Dimension.QUALITY


def _reviewer_key(spec: t.ReviewerSpec) -> str:
    # The combined trivial-change reviewer is the quality reviewer with the requirements check;
    # the check itself travels in RoundFacts.requirements_check.
    return spec.dimension.value


def configured_reviewers(workspace: Workspace) -> list[ConfiguredReviewer]:
    """The workspace's reviewer settings as the pipeline template reads them."""
    return [
        ConfiguredReviewer(
            key=c.key,
            enabled=c.enabled,
            builtin=c.builtin,
            dimension=c.dimension,
            tiers=tuple(c.tiers),
            requirements_check=base_agent_checks_requirements(c.base_agent),
        )
        for c in workspace.reviewers.all()
    ]
