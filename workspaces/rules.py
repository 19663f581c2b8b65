"""Pure workspace rules: roles and what they allow, tiers, gated axes, input validation.

No Django here, so the rules can be read and property-tested on their own.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from config.application_errors import ApplicationError, ErrorCode
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
    DISCUSS = "discuss"
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
    # Viewers read the conversation; posting in it is a reviewer's.
    Perm.DISCUSS: Role.REVIEWER,
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


#: What an agent's token may do at most, whatever its person's role: it reviews, never
#: approves or administers (a publish it asks for waits for a person).
AGENT_ROLE_CAP = Role.REVIEWER
AGENT_NAME_MAX = 40
_AGENT_NAME = re.compile(r"[\w][\w .@'()-]*")


def agent_role(role: str) -> str:
    """The role an agent acts with: its person's, capped at AGENT_ROLE_CAP."""
    if ROLE_RANK[Role(role)] > ROLE_RANK[AGENT_ROLE_CAP]:
        return AGENT_ROLE_CAP.value
    return role


def agent_name_problem(name: str) -> str:
    """Why `name` cannot name an agent ("" when it can): it is shown in the audit trail and on
    findings, so it is short, printable and starts with a letter or digit."""
    if len(name) > AGENT_NAME_MAX:
        return f"An agent's name has at most {AGENT_NAME_MAX} characters."
    if not _AGENT_NAME.fullmatch(name):
        return (
            "An agent's name starts with a letter or digit and uses letters, digits, spaces "
            "and . @ ' ( ) - only."
        )
    return ""


class RuleError(ApplicationError, ValueError):
    """Input that breaks a workspace rule; the message is shown to the user as is."""

    code = ErrorCode.RULE_VIOLATION


class ReadOnlyError(ApplicationError):
    """A change to a review of a disconnected (archived) repository: its reviews are kept
    read-only until an admin connects it again."""

    code = ErrorCode.REPOSITORY_ARCHIVED
    http_status = 409


def archived_message(repository: object) -> str:
    return (
        f"{repository} is archived (disconnected): its reviews are kept read-only. "
        "An admin connects it again under Settings → Repositories to act on them."
    )


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
    Tier.BALANCED: (
        "Implementation, quality, architecture and requirements reviewers (the requirements "
        "check waits for the original request); the main list shows P0–P2."
    ),
    Tier.THOROUGH: (
        "All six: implementation, quality, architecture, requirements, security and "
        "performance reviewers; everything is shown."
    ),
    Tier.ADAPTIVE: "Reviewers chosen from the change itself: size, risk patterns, what it touches.",
}

# Deterministic axes a workspace may gate on; token axes are advisory only.
GateableAxis = Literal["visual", "apiContract", "performance"]
GATEABLE_AXES: tuple[str, ...] = get_args(GateableAxis)
DEFAULT_GATED_AXES = ("apiContract",)
# Workspace.gated_axes, the rules form, the API and clean_gated_axes all use this one type.
GatedAxes = list[GateableAxis]
GATED_AXES: TypeAdapter[GatedAxes] = TypeAdapter(GatedAxes)


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

# The dimension a base agent reviews: "combined" is the quality agent that also checks the
# change against the original request (docs/domain-rules.md#reviewer-dimensions-and-briefs).
BASE_AGENT_DIMENSION = {
    "implementation": "implementation",
    "quality": "quality",
    "architecture": "architecture",
    "requirements": "requirements",
    "combined": "quality",
}


def base_agent_dimension(base_agent: str) -> str:
    return BASE_AGENT_DIMENSION.get(base_agent, base_agent)


def base_agent_checks_requirements(base_agent: str) -> bool:
    return base_agent == "combined"


# Where a custom reviewer runs: the tiers it is enabled for; "adaptive" means it joins an
# adaptive round whenever the selection picks its base agent's dimension. Built-in reviewers run
# where the pipeline template says (reviews/pipeline/template.py).
ReviewerTierName = Literal["light", "balanced", "thorough", "adaptive"]
REVIEWER_TIERS: tuple[str, ...] = get_args(ReviewerTierName)
ReviewerTiers = list[ReviewerTierName]


def default_reviewer_tiers() -> list[str]:
    return list(REVIEWER_TIERS)


def clean_reviewer_tiers(values: Any) -> list[str]:
    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise RuleError("Tiers must be a list of: " + ", ".join(REVIEWER_TIERS) + ".")
    unknown = sorted({str(v) for v in values} - set(REVIEWER_TIERS))
    if unknown:
        raise RuleError(
            f"Unknown tier(s): {', '.join(unknown)}. A reviewer runs in: "
            + ", ".join(REVIEWER_TIERS)
            + "."
        )
    return [tier for tier in REVIEWER_TIERS if tier in values]


def runs_in_words(tiers: list[str], dimension: str) -> str:
    """Where a custom reviewer runs, as the settings page says it."""
    fixed = [t for t in tiers if t != "adaptive"]
    parts = [f"the {', '.join(fixed)} tier{'s' if len(fixed) > 1 else ''}"] if fixed else []
    if "adaptive" in tiers:
        parts.append(f"adaptive rounds that select the {dimension} reviewer")
    return "Runs in " + " and in ".join(parts) + "." if parts else "Runs in no tier."


# -- a reviewer's model endpoint ------------------------------------------------------------------
#
# An admin names the environment variable that holds a reviewer's key; the key itself never
# enters the database, a form or the API. The name must end in _API_KEY so that a setting
# cannot send another server secret (SECRET_KEY, DATABASE_URL) to a model endpoint it chose
# (docs/security.md#model-endpoints-and-keys).
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_KEY_LOOKALIKE = re.compile(
    r"^(sk|pk|rk|ghp|gho|ghs|github_pat|xox[abpr]|glpat|AKIA|ASIA|AIza)[-_]?[A-Za-z0-9]"
    r"|^Bearer\s"
    r"|[A-Za-z0-9+/_=-]{32,}"
)
API_KEY_ENV_SUFFIX = "_API_KEY"


def looks_like_a_key(value: str) -> bool:
    """A secret pasted where its variable's name belongs: a known key prefix, a bearer header,
    or a long run of key characters no variable name has."""
    value = value.strip()
    if _ENV_NAME.match(value) and "_" in value and len(value) <= 64:
        return False
    return bool(_KEY_LOOKALIKE.search(value))


#: Server variables never read for a reviewer, whatever the operator's allow-list says: the
#: server's own model key and its other secrets. Anything QUORUM_* is the server's too.
SERVER_VARIABLES = frozenset(
    {
        "QUORUM_LLM_API_KEY",
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "GITHUB_TOKEN",
        "GITHUB_WEBHOOK_SECRET",
        "GITHUB_CLIENT_SECRET",
    }
)


def key_variable_problem(name: str, allowed: Collection[str]) -> str:
    """Why a reviewer may not read the server variable `name` for its key ("" when it may):
    only a name the operator allow-listed (QUORUM_MODEL_KEY_VARIABLES), never the server's own.
    Checked when the setting is saved and again before every call."""
    if name in SERVER_VARIABLES or name.startswith("QUORUM_") or name.endswith("_FILE"):
        return (
            f"{name} is one of the server's own variables: a reviewer's settings never send the "
            "server's key or secrets to an endpoint. Enter the reviewer's own key instead."
        )
    if name not in allowed:
        return (
            f"{name} is not on the server's allow-list of key variables "
            "(QUORUM_MODEL_KEY_VARIABLES, kept by the operator): enter the reviewer's own key "
            "instead, or ask the operator to allow the variable."
        )
    return ""


def clean_api_key_env(value: str, allowed: Collection[str] = ()) -> str:
    value = value.strip()
    if not value:
        return ""
    if looks_like_a_key(value):
        raise RuleError(
            "That looks like an API key, not the name of an environment variable: enter a key "
            "in the reviewer's key field (stored sealed, never shown again), not here. Nothing "
            "was saved."
        )
    if len(value) > 100 or not _ENV_NAME.match(value):
        raise RuleError(
            f"{value!r} is not an environment variable name: use capital letters, digits and "
            "underscores, not starting with a digit (e.g. OPENAI_API_KEY)."
        )
    problem = key_variable_problem(value, allowed)
    if problem:
        raise RuleError(problem)
    return value


#: The longest model key an admin may enter (real ones are well under 300 characters).
MODEL_KEY_MAX = 1000


def clean_model_key(value: str) -> str:
    """A model key an admin enters for a reviewer: printable, one line, not absurdly long.
    Errors never quote it."""
    value = value.strip()
    if len(value) > MODEL_KEY_MAX:
        raise RuleError(f"A model key has at most {MODEL_KEY_MAX} characters. Nothing was saved.")
    if any(not c.isprintable() or c.isspace() for c in value):
        raise RuleError(
            "A model key is one word of printable characters (no spaces, line breaks or "
            "control characters). Nothing was saved."
        )
    return value


def clean_base_url(value: str) -> str:
    """A model endpoint: http(s), no credentials in it (a key belongs in the environment)."""
    from urllib.parse import urlsplit

    value = value.strip()
    if not value:
        return ""
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        raise RuleError(f"{value!r} is not a URL.") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RuleError(
            f"{value!r} is not an http(s) URL of a model server, e.g. https://api.openai.com/v1."
        )
    if parts.username or parts.password or "key=" in parts.query.lower():
        raise RuleError(
            "The base URL carries credentials: keys never go into settings. Name the "
            "environment variable that holds the key in the key variable field instead."
        )
    if len(value) > 300:
        raise RuleError("The base URL is longer than 300 characters.")
    return value


# -- a reviewer's profile: anti-patterns, weighted criteria, few-shots ---------------------------
#
# One model per shape, shared by the settings form (workspaces/forms.py), the API schemas
# (workspaces/api.py), the service (the clean_* functions below) and the ReviewerConfig columns,
# which validate every write against them. Each caller turns a ValidationError into its own
# error shape: a form error, a 422, a RuleError.


def _storable(value: str) -> str:
    # PostgreSQL refuses NUL in jsonb text (config/api_types.py says the same for the API).
    if "\x00" in value:
        raise ValueError("text cannot contain NUL (\\x00) characters")
    return value


StoredText = Annotated[
    str, AfterValidator(_storable), Field(json_schema_extra={"pattern": r"^[^\x00]*$"})
]
_Stripped = Annotated[StoredText, AfterValidator(str.strip)]
_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


_IntWeight = Annotated[int, Field(gt=0, le=10)]
_FloatWeight = Annotated[float, Field(gt=0, le=10)]


class Criterion(BaseModel):
    """A weighted review criterion: a name and a weight in (0, 10]."""

    model_config = _STRICT

    # The schema says what the validator below checks: some character that is not blank.
    name: Annotated[
        _Stripped,
        Field(
            min_length=1,
            max_length=200,
            json_schema_extra={"pattern": r"^[^\x00]*[^\s\x00][^\x00]*$"},
        ),
    ]
    # An int stays an int ("5", not "5.0", in the form and the prompt); a bool is no weight.
    weight: _IntWeight | _FloatWeight

    @field_validator("name", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError("a criterion needs a name")
        return value

    @field_validator("weight", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 10:
            raise ValueError("the weight must be a number in (0, 10]")
        return value


#: What `_not_blank` checks, said in the API's schema: no NUL, and something besides whitespace
#: as either reader counts it. JavaScript's \s (what a client's JSON Schema validator uses)
#: lacks \x1c-\x1f and \x85, which Python's str.strip() removes; Python's lacks U+FEFF. The
#: class names them, and the check treats U+FEFF as blank, so the two can never disagree.
_NOT_BLANK_SCHEMA: dict[str, Any] = {"pattern": r"^[^\x00]*[^\x00\s\x1c-\x1f\x85\ufeff][^\x00]*$"}


class FewShot(BaseModel):
    """A calibration example: a code excerpt, the good verdict and an optional bad one."""

    model_config = _STRICT

    excerpt: Annotated[
        StoredText, Field(min_length=1, max_length=20000, json_schema_extra=_NOT_BLANK_SCHEMA)
    ]
    good: Annotated[
        _Stripped, Field(min_length=1, max_length=2000, json_schema_extra=_NOT_BLANK_SCHEMA)
    ]
    bad: Annotated[_Stripped, Field(max_length=2000)] = ""

    @field_validator("excerpt", "good")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.replace("\ufeff", "").strip():
            raise ValueError("is required and must be text")
        return value


AntiPattern = Annotated[_Stripped, Field(max_length=200)]


def _drop_blank(values: list[str]) -> list[str]:
    return [v for v in values if v]


AntiPatterns = Annotated[list[AntiPattern], Field(max_length=100), AfterValidator(_drop_blank)]
Criteria = Annotated[list[Criterion], Field(max_length=100)]
FewShots = Annotated[list[FewShot], Field(max_length=50)]

ANTI_PATTERNS: TypeAdapter[list[str]] = TypeAdapter(AntiPatterns)
CRITERIA: TypeAdapter[list[Criterion]] = TypeAdapter(Criteria)
FEW_SHOTS: TypeAdapter[list[FewShot]] = TypeAdapter(FewShots)


def schema_problem(exc: ValidationError, *, item: str, items: str) -> str:
    """The first problem in words: which item (1-based), which field, what is wrong."""
    error = exc.errors()[0]
    loc = list(error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if not loc:
        return f"{items} must be a list: {message}."
    where = item
    first = loc[0]
    if isinstance(first, int):
        where += f" {first + 1}"
        loc.pop(0)
    if loc:
        where += f", '{'.'.join(str(p) for p in loc)}'"
    return f"{where}: {message}."


def _clean(adapter: TypeAdapter[Any], values: Any, *, item: str, items: str) -> list[Any]:
    try:
        cleaned = adapter.validate_python(values)
    except ValidationError as exc:
        raise RuleError(schema_problem(exc, item=item, items=items)) from exc
    return adapter.dump_python(cleaned, mode="json")  # type: ignore[no-any-return]


def clean_anti_patterns(values: Any) -> list[str]:
    return _clean(ANTI_PATTERNS, values, item="Anti-pattern", items="Anti-patterns")


def clean_criteria(values: Any) -> list[dict[str, Any]]:
    """Weighted criteria: [{"name": str, "weight": number in (0, 10]}]."""
    return _clean(CRITERIA, values, item="Criterion", items="Criteria")


def clean_few_shots(values: Any) -> list[dict[str, str]]:
    """Calibration few-shots: [{"excerpt": code, "good": verdict, "bad": optional verdict}]."""
    return _clean(FEW_SHOTS, values, item="Few-shot", items="Few-shots")


# Tombstone.counts: how many rounds, findings, … went with a deleted object.
TombstoneCounts = dict[str, int]


def calibration_stale(*, effective_model: str, calibrated_model: str) -> bool:
    """Few-shots were tuned on one model; on another they may mislead."""
    return bool(calibrated_model) and effective_model != calibrated_model


#: The largest token budget a form accepts: far beyond any review, small enough for the column.
MAX_TOKEN_BUDGET = 1_000_000_000


def clean_token_budget(value: int | None, *, what: str, optional: bool) -> int | None:
    """A positive number of tokens (None only where a budget is optional: no limit)."""
    if value is None:
        if optional:
            return None
        raise RuleError(f"The {what} is required: a positive number of tokens.")
    if value < 1:
        raise RuleError(
            f"The {what} must be a positive number of tokens"
            + (" (leave it empty for no limit)." if optional else ".")
        )
    if value > MAX_TOKEN_BUDGET:
        raise RuleError(f"The {what} must be at most {MAX_TOKEN_BUDGET:,} tokens.")
    return value


GITHUB_HANDLE_MAX = 39  # a GitHub login's longest
_GITHUB_HANDLE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9]))*")


def clean_github_handle(handle: str) -> str:
    """The handle people write after @ on GitHub to ask Quorum (`quorum`), as a GitHub login
    may be spelt: letters, digits and single inner hyphens, at most 39."""
    text = (handle or "").strip().removeprefix("@")
    if not text:
        raise RuleError("Give the handle people write after @ to ask Quorum, e.g. quorum.")
    if len(text) > GITHUB_HANDLE_MAX or not _GITHUB_HANDLE.fullmatch(text):
        raise RuleError(
            "A handle is spelt like a GitHub login: up to 39 letters, digits and single "
            "hyphens, not at the start or the end."
        )
    return text.lower()
