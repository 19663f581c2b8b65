"""The pr_review pipeline as data: stages and reviewers with their runWhen gates.

The tier is enforced here, by gates evaluated against facts about the round, never by prompt
wording. The template is shown read-only in the UI; `gate_passes` is its only interpreter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Facts = Mapping[str, Any]


@dataclass(frozen=True)
class ReviewerEntry:
    key: str  # the reviewer config key, also the stream name and the agent identity
    dimension: str
    run_when: Mapping[str, Any] = field(default_factory=dict)
    # The brief also checks the change against the original request (the "combined" reviewer).
    requirements_check: bool = False


@dataclass(frozen=True)
class ConfiguredReviewer:
    """A workspace's setting for one reviewer, as the template reads it (workspaces'
    ReviewerConfig). A built-in one is matched to its entry by key and may only switch it off;
    a custom one brings its own entry: its base agent's dimension, gated on its tiers."""

    key: str
    enabled: bool = True
    builtin: bool = True
    dimension: str = ""
    tiers: tuple[str, ...] = ()
    requirements_check: bool = False


@dataclass(frozen=True)
class Stage:
    name: str
    kind: str  # "inline" (runs in the coordinator) or "fanout" (one step per unit, in parallel)
    run_when: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


TIERED = ("light", "balanced", "thorough")

PR_REVIEW_STAGES: tuple[Stage, ...] = (
    Stage("prepare", "inline", description="PR, diff, worktree, classification, change map"),
    Stage("reviewers", "fanout", {"fast_exit": False}, "independent reviewers in parallel"),
    Stage("consolidate", "inline", {"fast_exit": False}, "lead pass: dedup, demote, walkthrough"),
    # In fast mode the panel only plans: every finding is marked unverified, no lens runs.
    Stage(
        "panel",
        "fanout",
        {"fast_exit": False, "model_configured": True},
        "three verifier lenses per finding",
    ),
    # Fast panel mode skips the critic too, and so any follow-up reviewer.
    Stage(
        "critic",
        "inline",
        {"fast_exit": False, "panel_mode": ["normal", "rigorous"]},
        "completeness critic",
    ),
    Stage(
        "followup", "fanout", {"fast_exit": False, "followup": True}, "one bounded extra reviewer"
    ),
    # The follow-up reviewer's findings go through the same lead pass and panel as the others'.
    Stage(
        "followup_consolidate",
        "inline",
        {"fast_exit": False, "followup": True},
        "lead pass again, with the follow-up reviewer's findings",
    ),
    Stage(
        "followup_panel",
        "fanout",
        {
            "fast_exit": False,
            "followup": True,
            "model_configured": True,
            "panel_mode": ["normal", "rigorous"],
        },
        "verifier lenses on the findings not verified yet",
    ),
    Stage("finalise", "inline", description="axes and verdict"),
)

# Model reviewers by tier; adaptive selection is decided from the change (facts["selected"]).
PR_REVIEW_REVIEWERS: tuple[ReviewerEntry, ...] = (
    ReviewerEntry(
        "implementation", "implementation", {"tier": list(TIERED), "model_configured": True}
    ),
    ReviewerEntry(
        "quality", "quality", {"tier": ["balanced", "thorough"], "model_configured": True}
    ),
    ReviewerEntry(
        "architecture", "architecture", {"tier": ["balanced", "thorough"], "model_configured": True}
    ),
    # Checks the change against the original request; without one it waits (a process block).
    ReviewerEntry(
        "requirements",
        "requirements",
        {"tier": ["balanced", "thorough"], "model_configured": True},
    ),
    ReviewerEntry("security", "security", {"tier": ["thorough"], "model_configured": True}),
    ReviewerEntry("performance", "performance", {"tier": ["thorough"], "model_configured": True}),
    # Offline analyzers need no model and run on every change in their languages.
    ReviewerEntry("ruff", "quality", {"python_changed": True}),
    ReviewerEntry("bandit", "security", {"python_changed": True}),
    ReviewerEntry("oxlint", "quality", {"js_changed": True}),
    ReviewerEntry("ast-grep", "security", {"patterns_changed": True}),
    ReviewerEntry("secrets", "security"),
)


def gate_passes(gate: Mapping[str, Any], facts: Facts) -> bool:
    """Every key of the gate must hold: a list means "one of", anything else means "equals"."""
    for key, expected in gate.items():
        value = facts.get(key)
        if isinstance(expected, list | tuple | set | frozenset):
            if value not in expected:
                return False
        elif value != expected:
            return False
    return True


def _custom_entry(custom: ConfiguredReviewer, facts: Facts) -> ReviewerEntry:
    tiers = [t for t in custom.tiers if t in TIERED]
    if facts.get("tier") == "adaptive" and "adaptive" in custom.tiers:
        # It joins an adaptive round beside the reviewer of its dimension, when one is picked.
        picked = [dimension for _, dimension in facts.get("selected", ())]
        tiers = ["adaptive"] if custom.dimension in picked else []
    gate = {"tier": tiers, "model_configured": True}
    return ReviewerEntry(custom.key, custom.dimension, gate, custom.requirements_check)


def _wanted(facts: Facts, configured: Sequence[ConfiguredReviewer]) -> list[ReviewerEntry]:
    """Every reviewer the round's gates call for, before the workspace switches any off."""
    if facts.get("tier") == "adaptive":
        checked = set(facts.get("requirements_check") or ())
        selected = list(facts.get("selected", ()))
        entries = [
            ReviewerEntry(key, dimension, {"model_configured": True}, key in checked)
            for key, dimension in selected
        ]
        analyzers = [r for r in PR_REVIEW_REVIEWERS if "tier" not in r.run_when]
        entries += analyzers
    else:
        entries = list(PR_REVIEW_REVIEWERS)
    taken = {e.key for e in entries}
    entries += [_custom_entry(c, facts) for c in configured if not c.builtin and c.key not in taken]
    return [r for r in entries if gate_passes(r.run_when, facts)]


def reviewers_for(
    facts: Facts, configured: Sequence[ConfiguredReviewer] = ()
) -> list[ReviewerEntry]:
    """The reviewers a round runs: the tier's (adaptive rounds take the selection made from the
    change) and the workspace's custom reviewers for this tier, less those it disabled."""
    off = disabled_keys(configured)
    return [r for r in _wanted(facts, configured) if r.key not in off]


def disabled_reviewers(
    facts: Facts, configured: Sequence[ConfiguredReviewer] = ()
) -> list[ReviewerEntry]:
    """The reviewers the gates call for that the workspace switched off: the round says so."""
    off = disabled_keys(configured)
    return [r for r in _wanted(facts, configured) if r.key in off]


def disabled_keys(configured: Sequence[ConfiguredReviewer]) -> frozenset[str]:
    return frozenset(c.key for c in configured if not c.enabled)


def describe(configured: Sequence[ConfiguredReviewer] = ()) -> list[dict[str, Any]]:
    """The template for the read-only view in the UI and the API; with a workspace's settings,
    its custom reviewers too, and which reviewers it switched off."""
    off = disabled_keys(configured)
    customs = [
        ReviewerEntry(
            c.key,
            c.dimension,
            {"tier": list(c.tiers), "model_configured": True},
            c.requirements_check,
        )
        for c in configured
        if not c.builtin
    ]
    return [
        {"stage": s.name, "kind": s.kind, "runWhen": dict(s.run_when), "description": s.description}
        for s in PR_REVIEW_STAGES
    ] + [
        {
            "reviewer": r.key,
            "dimension": r.dimension,
            "runWhen": dict(r.run_when),
            **({"enabled": False} if r.key in off else {}),
            **({"requirementsCheck": True} if r.requirements_check else {}),
        }
        for r in (*PR_REVIEW_REVIEWERS, *customs)
    ]


def builtin_runs_in(key: str, dimension: str) -> str:
    """Where a built-in reviewer runs, in the settings page's words: its tiers, and adaptive
    rounds when the selection picks its dimension (the only place one outside the tiers runs)."""
    entry = next((r for r in PR_REVIEW_REVIEWERS if r.key == key), None)
    adaptive = f"adaptive rounds that select the {entry.dimension if entry else dimension} reviewer"
    tiers = list(entry.run_when.get("tier", ())) if entry else []
    if not tiers:
        return f"Runs in {adaptive}."
    plural = "s" if len(tiers) > 1 else ""
    return f"Runs in the {', '.join(tiers)} tier{plural} and in {adaptive}."
