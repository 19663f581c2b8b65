"""The shapes a round keeps as JSON: what its stages found (`RoundStats`), the facts its stage
gates are evaluated against (`RoundFacts`) and the stages it has finished (`StageName`).

`RoundStats` is written stage by stage (prepare, panel planning, consolidate, critic, finalise):
every key is optional, and a key a stage has not written yet is absent from the stored JSON
rather than stored empty. It is read by the review page, the report, the export and the
pipeline's later stages, always through these models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reviews.domain.classification import FastExit, SizeClass

StageName = Literal[
    "prepare",
    "reviewers",
    "consolidate",
    "panel",
    "critic",
    "followup",
    "followup_consolidate",
    "followup_panel",
    "finalise",
]
PanelModeName = Literal["normal", "rigorous", "fast"]


class _Record(BaseModel):
    # Closed: a misspelt key is refused on write instead of stored and never read.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RoundFacts(_Record):
    """What the prepare stage (and the critic, for `followup`) learnt about the round; the
    pipeline template's runWhen gates read these and nothing else."""

    tier: str
    fast_exit: bool
    model_configured: bool
    python_changed: bool
    panel_mode: PanelModeName
    # JavaScript/TypeScript (oxlint), and any language Quorum's pattern rules read (ast-grep).
    js_changed: bool = False
    patterns_changed: bool = False
    followup: bool = False
    # Adaptive rounds: the reviewers chosen from the change, as (reviewer key, dimension).
    selected: list[tuple[str, str]] | None = None
    selection_rationale: list[str] | None = None
    # The reviewers whose brief also checks the change against the original request (the
    # "combined" reviewer of a trivial change, a custom reviewer on the combined base agent).
    requirements_check: list[str] | None = None
    # The reviewer whose brief also carries the security check: a high-risk change in a round
    # with no security reviewer of its own (reviews/domain/tiers.py `security_host`).
    security_check: list[str] | None = None

    def for_gates(self) -> dict[str, Any]:
        """The facts as the mapping `gate_passes` and `reviewers_for` read."""
        return self.model_dump(exclude_none=True)

    @property
    def fast_mode(self) -> bool:
        """The workspace's fast panel mode: the panel and the critic (so any follow-up) are
        skipped, which the report and the page say. A fast exit skips everything anyway."""
        return self.panel_mode == "fast" and not self.fast_exit


# -- prepare ------------------------------------------------------------------------------------


class Risk(_Record):
    pattern: str
    where: str  # path:line


class Classification(_Record):
    fast_exit: FastExit | None
    size: SizeClass
    files: int
    changed_lines: int
    risks: list[Risk] = []


class BlastRadius(_Record):
    definitions: int
    files: int


class ReadingStep(_Record):
    path: str
    symbols: list[str]
    is_test: bool


class PreviewHunk(_Record):
    index: int
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str
    text: str


class FilePreview(_Record):
    path: str
    hunks: list[PreviewHunk]


class ChangedFileSummary(_Record):
    """One changed file of the round's diff, for the review page's file tree. `key` is the
    content key a person's viewed mark is kept under (reviews/domain/file_tree.py)."""

    path: str
    change: str  # added | modified | deleted | renamed | binary
    additions: int
    deletions: int
    key: str
    old_path: str | None = None


class CohortSummary(_Record):
    """A cohort of the change as the review page shows it (reviews/index/cohorts.py)."""

    key: str
    label: str
    paths: list[str]
    symbols: list[str]
    context: list[str]
    edges: list[tuple[str, str, str]]  # (source, target, kind)
    blast_radius: BlastRadius | None
    reading_order: list[ReadingStep]
    diagram: str
    previews: list[FilePreview]
    # Own-code imports of its files the index could not resolve ("path: specifier"), and the
    # paths other cohorts change too (unconnected parts); absent from rounds before they existed.
    unresolved_imports: list[str] = []
    split_paths: list[str] = []


# -- consolidate ----------------------------------------------------------------------------


class Consolidation(_Record):
    demoted_duplicates: int
    co_located: int
    cross_referenced: int
    conflicting: int


class StreamCounts(_Record):
    accepted: int
    rejected: int


class RoutedNote(_Record):
    """A reviewer's note about another dimension, routed to it by the lead pass."""

    sender: str = Field(alias="from")  # the reviewer (agent) that wrote it
    node: int
    note: str


class TourStep(_Record):
    """One step of the lead's walkthrough: where to read, and what that part of the change
    does. Written from the cohorts and the change summary only, so it restates no finding."""

    title: str
    paths: list[str]
    explanation: str


# -- critic and finalise ----------------------------------------------------------------------


class CriticReport(_Record):
    missing_dimensions: list[str]
    uncited_files: list[str]
    uncovered_hot_spots: list[str]
    follow_up: str | None
    # The dimensions judged warranted: the rules' set joined with the critic model's.
    warranted: list[str] = []
    # What the critic model judged (None: no model call, or it abstained) and the gaps it saw.
    judged: list[str] | None = None
    judged_gaps: list[str] = []
    # Why the model's judgement was not used (its reply never validated, the call failed).
    abstained: str | None = None


class TokenTotals(_Record):
    tokens_in: int = Field(alias="in")
    tokens_out: int = Field(alias="out")


class PanelOutcome(_Record):
    """What the verification panel did; `skipped` alone when it did not run."""

    verified: int = 0
    filtered: int = 0
    contested: int = 0
    unverified: int = 0
    narrowed: bool = False
    skipped: bool = False
    # Analyzer findings not put to lens 1: their rule's match stood for it.
    rule_reachable: int = 0


# -- token budgets (prepare, panel planning, critic, finalise) -------------------------------------


class BudgetSkip(_Record):
    """A model call the round's budgets left out (reviews/domain/budget.py)."""

    stage: StageName  # where it was decided
    kind: Literal["reviewer", "panel", "follow_up", "lead", "critic"]
    key: str  # the reviewer's key, the finding's id, the follow-up's dimension
    estimate: int
    left: int
    budget: Literal["round", "pull request"]
    reason: str  # as the report and the page show it


class BudgetReport(_Record):
    """The budgets the round planned within, what it spent and what it skipped for them."""

    round_budget: int
    pr_budget: int | None = None
    pr_spent_before: int = 0  # what the pull request's earlier rounds had spent at prepare
    spent: int | None = None  # this round's model tokens, counted at finalise
    skipped: list[BudgetSkip] = []
    # Rounds reviewed before the spend ledger: the estimates of the calls no reviewer stream
    # recorded (the lead's walkthrough, the critic, the panel's checks). No longer written.
    unmetered: int = 0
    # Per panel stage, the estimate of the checks it planned: reserved until the stage is done.
    panel_planned: dict[str, int] = {}
    reviewer_cap: int | None = None  # each first-pass reviewer's cap, set when they are planned
    panel_room: int | None = None  # what the latest panel planning left beyond its checks
    # False: the budgets could not pay for the lead's walkthrough and the critic's call, so
    # neither is made (the deterministic walkthrough and the rules' coverage stand).
    shaped_calls: bool = True


class RoundStats(_Record):
    # prepare
    classification: Classification | None = None
    reviewers: list[str] | None = None
    # Reviewers the round's tier or selection called for that the workspace switched off.
    reviewers_disabled: list[str] | None = None
    not_covered_by_model: list[str] | None = None
    # Files of the head whose content the repository did not have (a partial clone's missing
    # blobs): listed as not read, never a reason to fail the round.
    unread_files: list[str] | None = None
    # Changed files the head's .gitattributes marks (linguist-vendored / -generated): their
    # kind, or "" when it keeps one in that its path would set aside (reviews/domain/vendored.py).
    vendored: dict[str, str] | None = None
    cohorts: list[CohortSummary] | None = None
    files: list[ChangedFileSummary] | None = None
    # panel planning
    panel_narrowed: bool | None = None
    # By panel stage, the groups of findings it sent to the lenses (a step each): whether the
    # panel ran, for the finaliser's summary, without a look at the steps.
    panel_groups: dict[str, int] | None = None
    # consolidate (and followup_consolidate again after a follow-up reviewer)
    consolidation: Consolidation | None = None
    streams: dict[str, StreamCounts] | None = None
    cross_notes: dict[str, list[RoutedNote]] | None = None
    walkthrough: str | None = None  # the deterministic tour: cohorts and their finding counts
    walkthrough_steps: list[TourStep] | None = None  # the lead model's tour, when it gave one
    # critic
    critic: CriticReport | None = None
    # prepare, panel planning, critic (skips) and finalise (spend)
    budget: BudgetReport | None = None
    # How long each part of the stages took, in seconds ("prepare.index", "finalise", …):
    # where a slow round spent its time, in the stats and the JSON.
    timings: dict[str, float] | None = None
    # finalise
    fast_exit_note: str | None = None
    context_utilization: float | None = None  # share of model findings citing the change map
    tokens: TokenTotals | None = None
    panel: PanelOutcome | None = None
    reviewers_failed: list[str] | None = None
    prose_only: list[str] | None = None

    def with_(self, **values: Any) -> RoundStats:
        """A copy with these keys written (validated: a wrong shape raises here)."""
        return RoundStats.model_validate(
            {**self.model_dump(by_alias=True, exclude_unset=True), **values}
        )

    def to_json(self) -> dict[str, Any]:
        """The stats as stored and exported: only the keys the stages wrote."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    @property
    def cohort_list(self) -> list[CohortSummary]:
        return self.cohorts or []

    @property
    def risk_list(self) -> list[Risk]:
        return self.classification.risks if self.classification else []


def stage_timings(
    known: dict[str, float] | None, stage: str, seconds: dict[str, float]
) -> dict[str, float]:
    """`known` with a stage's parts ("prepare.index") and its total ("prepare") written over,
    in seconds to the millisecond."""
    parts = {f"{stage}.{name}": round(value, 3) for name, value in seconds.items()}
    return {**(known or {}), **parts, stage: round(sum(seconds.values()), 3)}
