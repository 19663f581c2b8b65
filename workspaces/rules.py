"""Pure workspace rules: roles and what they allow, tiers, gated axes, input validation.

No Django here, so the rules can be read and property-tested on their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reviews.domain.types import Tier as Tier  # re-exported: forms and services import it here


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    APPROVER = "approver"
    REVIEWER = "reviewer"
    VIEWER = "viewer"


# Higher rank includes everything a lower rank may do.
ROLE_RANK = {Role.VIEWER: 0, Role.REVIEWER: 1, Role.APPROVER: 2, Role.ADMIN: 3, Role.OWNER: 4}


class Perm(StrEnum):
    VIEW = "view"
    VIEW_AUDIT = "view_audit"
    START_REVIEW = "start_review"
    TRIAGE_NODES = "triage_nodes"
    REQUEST_PUBLISH = "request_publish"
    DECIDE_APPROVAL = "decide_approval"
    MANAGE_RULES = "manage_rules"
    MANAGE_REVIEWERS = "manage_reviewers"
    MANAGE_REPOSITORIES = "manage_repositories"
    MANAGE_MEMBERS = "manage_members"
    MANAGE_OWNERS = "manage_owners"
    DELETE_REVIEWS = "delete_reviews"


# Auditors: every member may read the audit trail; it is read-only and it is what makes the
# other roles accountable, so hiding it from viewers would buy nothing.
MIN_ROLE: dict[Perm, Role] = {
    Perm.VIEW: Role.VIEWER,
    Perm.VIEW_AUDIT: Role.VIEWER,
    Perm.START_REVIEW: Role.REVIEWER,
    Perm.TRIAGE_NODES: Role.REVIEWER,
    Perm.REQUEST_PUBLISH: Role.REVIEWER,
    Perm.DECIDE_APPROVAL: Role.APPROVER,
    Perm.MANAGE_RULES: Role.ADMIN,
    Perm.MANAGE_REVIEWERS: Role.ADMIN,
    Perm.MANAGE_REPOSITORIES: Role.ADMIN,
    Perm.MANAGE_MEMBERS: Role.ADMIN,
    Perm.MANAGE_OWNERS: Role.OWNER,
    # Deleting a repository's reviews for good cannot be undone: owners only.
    Perm.DELETE_REVIEWS: Role.OWNER,
}


def role_allows(role: str | None, perm: Perm) -> bool:
    if role is None:
        return False
    return ROLE_RANK[Role(role)] >= ROLE_RANK[MIN_ROLE[perm]]


class RuleError(ValueError):
    """Input that breaks a workspace rule; the message is shown to the user as is."""


def check_role_change(
    *, actor_role: str, target_role: str, new_role: str | None, owners: int
) -> None:
    """new_role None means removal. Raises RuleError when the change is not allowed."""
    if new_role is not None and new_role not in Role.__members__.values():
        raise RuleError(f"Unknown role {new_role!r}.")
    touches_owner = Role.OWNER in (target_role, new_role)
    if touches_owner and not role_allows(actor_role, Perm.MANAGE_OWNERS):
        raise RuleError("Only an owner can grant or take away the owner role.")
    if target_role == Role.OWNER and new_role != Role.OWNER and owners <= 1:
        raise RuleError("The last owner cannot be removed or demoted.")


TIER_HELP = {
    Tier.LIGHT: "Implementation reviewer only; the main list shows P0–P1, the rest grouped below.",
    Tier.BALANCED: "Implementation, quality and architecture reviewers; the main list shows P0–P2.",
    Tier.THOROUGH: "All five: adds the security and performance briefs; everything is shown.",
    Tier.ADAPTIVE: "Reviewers chosen from the change itself: size, risk patterns, what it touches.",
}

# Deterministic axes a workspace may gate on; token axes are advisory only.
GATEABLE_AXES = ("visual", "apiContract", "performance")
DEFAULT_GATED_AXES = ("apiContract",)


def clean_gated_axes(values: list[str]) -> list[str]:
    unknown = sorted(set(values) - set(GATEABLE_AXES))
    if unknown:
        raise RuleError(
            f"Unknown or non-gateable axis: {', '.join(unknown)}. "
            f"Gateable axes: {', '.join(GATEABLE_AXES)}."
        )
    return [axis for axis in GATEABLE_AXES if axis in values]


_GITHUB_NAME = re.compile(r"^(?!-)[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$")
_BRANCH = re.compile(r"^(?!/)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/-]{1,200}(?<![./])$")


def clean_github_name(value: str) -> str:
    value = value.strip()
    if not _GITHUB_NAME.match(value) or value.split("/")[1] in {".", ".."}:
        raise RuleError(f"{value!r} is not a GitHub repository name of the form owner/name.")
    return value


def check_typed_name(*, expected: str, typed: str) -> None:
    """An irreversible deletion goes ahead only when the person typed the exact name."""
    if typed.strip() != expected:
        shown = typed.strip() or "nothing"
        raise RuleError(
            f"You typed {shown!r}, not the repository name {expected!r}: nothing was deleted."
        )


def clean_branch(value: str) -> str:
    value = value.strip()
    if not _BRANCH.match(value) or value.endswith(".lock"):
        raise RuleError(f"{value!r} is not a valid branch name.")
    return value


BASE_AGENTS = ("implementation", "quality", "architecture", "requirements", "combined")
MODEL_PROVIDERS = ("", "openai", "anthropic")


def clean_anti_patterns(values: Any) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise RuleError("Anti-patterns must be a list of names.")
    return [v.strip() for v in values if v.strip()]


def clean_criteria(values: Any) -> list[dict[str, Any]]:
    """Weighted criteria: [{"name": str, "weight": number in (0, 10]}]."""
    if not isinstance(values, list):
        raise RuleError("Criteria must be a list of {name, weight}.")
    cleaned = []
    for i, item in enumerate(values, start=1):
        if not isinstance(item, dict) or not str(item.get("name", "")).strip():
            raise RuleError(f"Criterion {i} needs a name.")
        weight = item.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight <= 10:
            raise RuleError(f"Criterion {i} ({item['name']}): weight must be a number in (0, 10].")
        cleaned.append({"name": str(item["name"]).strip(), "weight": weight})
    return cleaned


def clean_few_shots(values: Any) -> list[dict[str, str]]:
    """Calibration few-shots: [{"excerpt": code, "good": verdict, "bad": optional verdict}]."""
    if not isinstance(values, list):
        raise RuleError("Few-shots must be a list.")
    cleaned = []
    for i, item in enumerate(values, start=1):
        if not isinstance(item, dict):
            raise RuleError(f"Few-shot {i} must be an object with excerpt, good and optional bad.")
        unknown = set(item) - {"excerpt", "good", "bad"}
        if unknown:
            raise RuleError(f"Few-shot {i}: unknown field(s) {', '.join(sorted(unknown))}.")
        for field in ("excerpt", "good"):
            if not isinstance(item.get(field), str) or not item[field].strip():
                raise RuleError(f"Few-shot {i}: '{field}' is required and must be text.")
        bad = item.get("bad", "")
        if not isinstance(bad, str):
            raise RuleError(f"Few-shot {i}: 'bad' must be text.")
        cleaned.append(
            {"excerpt": item["excerpt"], "good": item["good"].strip(), "bad": bad.strip()}
        )
    return cleaned


def model_label(provider: str, name: str) -> str:
    return f"{provider}:{name}" if provider and name else ""


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model a reviewer runs on. `api_key_env` names the environment variable holding its
    key ("": the server's own key); `base_url` "" is the provider's default endpoint."""

    provider: str
    name: str
    base_url: str = ""
    api_key_env: str = ""

    @property
    def label(self) -> str:
        return model_label(self.provider, self.name)


def model_choice(
    *,
    provider: str,
    name: str,
    base_url: str,
    api_key_env: str,
    default: ModelChoice | None,
) -> ModelChoice | None:
    """A reviewer's own model settings over the server's defaults, field by field (a reviewer
    may name only a model and keep the server's provider). None when no provider and model
    name are known: the reviewer cannot run, only the offline analyzers can."""
    provider = provider or (default.provider if default else "")
    name = name or (default.name if default else "")
    if not provider or not name:
        return None
    return ModelChoice(
        provider=provider,
        name=name,
        base_url=base_url or (default.base_url if default else ""),
        api_key_env=api_key_env,
    )


def calibration_stale(*, effective_model: str, calibrated_model: str) -> bool:
    """Few-shots were tuned on one model; on another they may mislead."""
    return bool(calibrated_model) and effective_model != calibrated_model
