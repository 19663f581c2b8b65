"""What the workspace API takes and answers, as schemas (the OpenAPI document is the
contract): rules, budgets, reviewers and their precision, members, repositories. The
routes that serve them are in workspaces/api/routes.py."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from ninja import Field, Schema
from pydantic import Strict

from config.api_types import Input, ReviewerKey, Text, body_int
from reviews.domain.types import Tier
from workspaces.rules import (
    MAX_TOKEN_BUDGET,
    AntiPatterns,
    Criteria,
    Criterion,
    FewShot,
    FewShots,
    GatedAxes,
    ReviewerTiers,
    Role,
)

# Request values from the domain's vocabulary, sent as their text values (strict input would
# otherwise want enum instances). A role is a Literal of the Role values, in their order
# (tests/test_vocabulary_literals.py holds the two equal): the request schema lists them inline.
TierName = Annotated[Tier, Strict(False)]
RoleName = Literal["owner", "admin", "approver", "reviewer", "viewer"]


class WorkspaceOut(Schema):
    slug: str
    name: str
    role: Role


class RulesOut(Schema):
    tier: Tier
    gated_axes: GatedAxes
    # apiContract holds a change in a language whose API it cannot read.
    hold_unreadable_languages: bool = False
    # Dismissing a P0 finding needs the approver role (or admin or owner).
    p0_dismissal_needs_approver: bool = False


class RulesIn(Input):
    tier: TierName
    gated_axes: GatedAxes = Field(default_factory=list)
    hold_unreadable_languages: bool | None = None
    p0_dismissal_needs_approver: bool | None = None


TokenBudget = body_int(ge=1, le=MAX_TOKEN_BUDGET)


class BudgetsOut(Schema):
    round_token_budget: int
    pr_token_budget: int | None  # null: no budget per pull request


class BudgetsIn(Input):
    round_token_budget: TokenBudget  # type: ignore[valid-type]
    pr_token_budget: TokenBudget | None = None  # type: ignore[valid-type]


class GitHubOut(Schema):
    handle: str  # people write @handle on GitHub to ask Quorum


class GitHubIn(Input):
    # Spelt as a GitHub login; a hyphen at either end or doubled is refused with 400.
    handle: str = Field(min_length=1, max_length=39, pattern=r"^[A-Za-z0-9-]+$")


class ReviewerOut(Schema):
    key: str
    name: str
    base_agent: str
    brief: str
    builtin: bool
    enabled: bool
    model_provider: str
    model_name: str
    instructions: str
    anti_patterns: list[str]
    criteria: list[Criterion]
    few_shots: list[FewShot]
    calibrated_model: str
    calibration_stale: bool
    base_url: str
    # The name of an allow-listed server variable holding the key.
    api_key_env: str
    # Whether the reviewer has a key of its own (entered sealed; never returned).
    api_key_set: bool
    tiers: ReviewerTiers


class ReviewerPatch(Input):
    name: Text | None = Field(default=None, min_length=1, max_length=100)
    base_agent: (
        Literal["implementation", "quality", "architecture", "requirements", "combined"] | None
    ) = None
    brief: Text | None = Field(default=None, max_length=20000)
    enabled: bool | None = None
    model_provider: Literal["", "openai", "anthropic"] | None = None
    model_name: Text | None = Field(default=None, max_length=200)
    instructions: Text | None = Field(default=None, max_length=20000)
    # The shapes the settings form and the service check too (workspaces/rules.py).
    anti_patterns: AntiPatterns | None = None
    criteria: Criteria | None = None
    few_shots: FewShots | None = None
    calibrated_model: Text | None = Field(default=None, max_length=220)
    # Checked by the service (workspaces/rules.py): an http(s) URL without credentials, and an
    # environment variable NAME ending in _API_KEY; a value that looks like a key is refused.
    base_url: Text | None = Field(default=None, max_length=300)
    api_key_env: Text | None = Field(default=None, max_length=100)
    # Write-only: the reviewer's own model key, stored sealed ("" removes it). Checked by the
    # service, whose refusals never quote it.
    api_key: str | None = Field(default=None, max_length=1000)
    tiers: ReviewerTiers | None = None


class ReviewerCreate(ReviewerPatch):
    key: ReviewerKey
    name: Text = Field(min_length=1, max_length=100)
    base_agent: Literal["implementation", "quality", "architecture", "requirements", "combined"]


class FewShotProposalOut(Schema):
    """A few-shot proposed for a reviewer from a person's decision on one of its findings."""

    id: int
    reviewer: str
    # good: the reviewer was right (resolved, confirmed, upheld); bad: a person decided
    # otherwise (dismissed with a reason, overruled), and the reason is the good verdict.
    kind: Literal["good", "bad"]
    outcome: Literal["dismissed", "overruled", "resolved", "confirmed", "sided"]
    finding: int  # the finding's id
    review: int  # its review's id (space_id)
    path: str
    rule: str
    few_shot: FewShot  # the code (redacted), the good verdict and the verdict to avoid
    status: Literal["proposed", "accepted", "rejected"]
    created_at: datetime


class FewShotProposalIn(Input):
    action: Literal["accept", "edit", "reject"]
    # accept: the few-shot as accepted (the proposal's own when left out); edit: its new text.
    few_shot: FewShot | None = None


class MemberOut(Schema):
    id: int
    email: str
    role: Role


class InvitationOut(Schema):
    id: int
    email: str
    role: Role
    pending: bool = True


class InviteIn(Input):
    email: Text = Field(min_length=3, max_length=254)
    role: RoleName


class RoleIn(Input):
    role: RoleName


class RepositoryOut(Schema):
    id: int
    kind: str
    # `owner/name` on GitHub; a local repository's directory name (its path is `path`).
    name: str
    path: str | None = None
    base_branch: str
    auto_review: bool
    # Draft pull requests are reviewed automatically too (with auto_review).
    review_drafts: bool = False
    # The `Quorum` check run concludes a Hold as failure (a required check then blocks the
    # merge), not neutral.
    hold_fails_check: bool = False
    # Set when disconnected: its reviews are kept read-only and it takes no new review.
    archived_at: datetime | None = None


class RepositoryPurgeIn(Input):
    confirm_name: Text = Field(max_length=1024, description="the repository's name, typed")


class RepositoryPurgeOut(Schema):
    deleted: dict[str, int]


class RepositoryIn(Input):
    kind: Literal["github", "local"]
    name: Text = Field(min_length=1, max_length=1024)
    base_branch: Text = Field(default="main", min_length=1, max_length=200)
    auto_review: bool = False
    review_drafts: bool = False


class RepositoryPatch(Input):
    base_branch: Text | None = Field(default=None, min_length=1, max_length=200)
    auto_review: bool | None = None
    review_drafts: bool | None = None
    hold_fails_check: bool | None = None


class RulePrecisionOut(Schema):
    # An analyzer's rule id (bandit B608, ruff F401), a model reviewer's defect category.
    rule: str
    kept: int
    dismissed: int
    decisions: int
    precision: float | None
    # The 95% Wilson score interval of the precision.
    low: float
    high: float


class ReviewerPrecisionOut(Schema):
    reviewer: str  # its stream's name: implementation, bandit, a custom reviewer's key
    kept: int
    dismissed: int
    decisions: int
    precision: float | None
    low: float
    high: float
    # How the decisions came: resolved, confirmed, upheld, fixed (kept) and dismissed (wrong).
    outcomes: dict[str, int]
    rules: list[RulePrecisionOut]
    # Whether the reviewer's stated confidence is calibrated from these decisions (enough).
    calibrated: bool


class PrecisionOut(Schema):
    repository: int | None  # null: the whole workspace
    last: int | None  # each reviewer's most recent decisions counted; null: all
    reviewers: list[ReviewerPrecisionOut]
