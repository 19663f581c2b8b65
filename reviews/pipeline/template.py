"""The pr_review pipeline as data: stages and reviewers with their runWhen gates.

The tier is enforced here, by gates evaluated against facts about the round, never by prompt
wording. The template is shown read-only in the UI; `gate_passes` is its only interpreter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Facts = Mapping[str, Any]


@dataclass(frozen=True)
class ReviewerEntry:
    key: str  # the reviewer config key, also the stream name and the agent identity
    dimension: str
    run_when: Mapping[str, Any] = field(default_factory=dict)


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
    Stage(
        "panel",
        "fanout",
        {"fast_exit": False, "model_configured": True, "panel_mode": ["normal", "rigorous"]},
        "three verifier lenses per finding",
    ),
    Stage("critic", "inline", {"fast_exit": False}, "completeness critic"),
    Stage(
        "followup", "fanout", {"fast_exit": False, "followup": True}, "one bounded extra reviewer"
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
    # Offline analyzers need no model and run on every Python change.
    ReviewerEntry("ruff", "quality", {"python_changed": True}),
    ReviewerEntry("bandit", "security", {"python_changed": True}),
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


def reviewers_for(facts: Facts) -> list[ReviewerEntry]:
    """The reviewers a round runs. Adaptive rounds take the selection made from the change."""
    if facts.get("tier") == "adaptive":
        selected = list(facts.get("selected", ()))
        entries = [
            ReviewerEntry(key, dimension, {"model_configured": True}) for key, dimension in selected
        ]
        analyzers = [r for r in PR_REVIEW_REVIEWERS if "tier" not in r.run_when]
        return [r for r in entries + analyzers if gate_passes(r.run_when, facts)]
    return [r for r in PR_REVIEW_REVIEWERS if gate_passes(r.run_when, facts)]


def describe() -> list[dict[str, Any]]:
    """The template for the read-only view in the UI and the API."""
    return [
        {"stage": s.name, "kind": s.kind, "runWhen": dict(s.run_when), "description": s.description}
        for s in PR_REVIEW_STAGES
    ] + [
        {"reviewer": r.key, "dimension": r.dimension, "runWhen": dict(r.run_when)}
        for r in PR_REVIEW_REVIEWERS
    ]
