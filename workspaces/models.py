from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from pathlib import PurePosixPath

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from config.typed_json import SchemaJSONField
from reviews.domain import few_shots
from workspaces import model_choice as choices
from workspaces import rules


class Workspace(models.Model):
    Tier = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Tier", {t.name: (t.value, t.value.capitalize()) for t in rules.Tier}
    )

    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=50, unique=True)
    tier = models.CharField(max_length=16, choices=Tier.choices, default=rules.Tier.BALANCED.value)
    gated_axes = SchemaJSONField(schema=rules.GatedAxes, default=list, blank=True)
    # apiContract holds a change whose API is in a language it cannot read (off: it notes them).
    hold_unreadable_languages = models.BooleanField(default=False)
    # Dismissing a P0 finding is kept for approvers and above
    # (docs/domain-rules.md#decisions-carry-their-reason).
    p0_dismissal_needs_approver = models.BooleanField(default=False)
    # Model spending per round and per call; the verification panel's mode
    # (docs/domain-rules.md#the-panel-lenses).
    round_token_budget = models.PositiveIntegerField(default=400_000)
    # Every round of one pull request together; None: no limit beyond each round's
    # (docs/domain-rules.md#token-budgets).
    pr_token_budget = models.PositiveIntegerField(null=True, blank=True)
    call_timeout_seconds = models.PositiveIntegerField(default=120)
    panel_mode = models.CharField(
        max_length=10,
        choices=[("normal", "normal"), ("rigorous", "rigorous"), ("fast", "fast")],
        default="normal",
    )
    # What people on GitHub write (`@quorum`) to ask the review a question in a thread.
    github_handle = models.CharField(max_length=39, default="quorum")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("workspaces:general", args=[self.slug])


class Membership(models.Model):
    Role = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Role", {r.name: (r.value, r.value.capitalize()) for r in rules.Role}
    )

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=rules.Role.VIEWER.value)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} as {self.role}"

    def allows(self, perm: rules.Perm) -> bool:
        return rules.role_allows(self.role, perm)


def _invitation_nonce() -> str:
    return secrets.token_hex(16)


def _invitation_expiry():
    return timezone.now() + timedelta(days=settings.QUORUM_INVITATION_DAYS)


class Invitation(models.Model):
    """A pending membership. It becomes one only when a signed-in user whose verified address is
    this email accepts the signed link sent there; the nonce makes each link single-use."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Membership.Role.choices)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    nonce = models.CharField(max_length=32, default=_invitation_nonce)
    expires_at = models.DateTimeField(default=_invitation_expiry)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "email"], name="invitation_unique")
        ]

    def __str__(self) -> str:
        return f"{self.email} → {self.workspace} ({self.role})"


class ReviewerConfig(models.Model):
    BaseAgent = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "BaseAgent", {a.upper(): (a, a.capitalize()) for a in rules.BASE_AGENTS}
    )

    class Provider(models.TextChoices):
        DEFAULT = "", "Environment default"
        OPENAI = "openai", "OpenAI-compatible"
        ANTHROPIC = "anthropic", "Anthropic"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="reviewers")
    key = models.SlugField(max_length=50)
    name = models.CharField(max_length=100)
    base_agent = models.CharField(max_length=20, choices=BaseAgent.choices)
    # Security and performance are not agents of their own: a base agent with a brief
    # (docs/domain-rules.md#reviewer-dimensions-and-briefs).
    brief = models.TextField(blank=True)
    builtin = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    model_provider = models.CharField(max_length=20, choices=Provider.choices, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    base_url = models.URLField(max_length=300, blank=True)
    # The NAME of an allow-listed server variable holding the key (docs/security.md).
    api_key_env = models.CharField(max_length=100, blank=True)
    # The key an admin entered for this reviewer, sealed (workspaces/sealing.py) with a key
    # outside the database; never rendered, never in an API answer or an audit payload.
    api_key_sealed = models.TextField(blank=True, default="")
    instructions = models.TextField(blank=True)
    # The shapes the settings form, the API and the service share (workspaces/rules.py).
    anti_patterns = SchemaJSONField(schema=rules.AntiPatterns, default=list, blank=True)
    criteria = SchemaJSONField(schema=rules.Criteria, default=list, blank=True)
    few_shots = SchemaJSONField(schema=rules.FewShots, default=list, blank=True)
    calibrated_model = models.CharField(max_length=220, blank=True)
    # Custom reviewers only: the tiers it runs in (built-in ones run where the pipeline
    # template says). docs/domain-rules.md#custom-reviewers-and-disabled-reviewers
    tiers = SchemaJSONField(
        schema=rules.ReviewerTiers, default=rules.default_reviewer_tiers, blank=True
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-builtin", "key"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "key"], name="reviewer_config_unique")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def dimension(self) -> str:
        """What a custom reviewer looks at: its base agent's dimension."""
        return rules.base_agent_dimension(self.base_agent)

    @property
    def runs_in(self) -> str:
        return rules.runs_in_words(list(self.tiers), self.dimension)

    def model_choice(self) -> choices.ModelChoice | None:
        return reviewer_model(self)

    def effective_model(self) -> str:
        """The model this reviewer runs on ("" when none): what calibration compares with."""
        choice = self.model_choice()
        return choice.label if choice else ""

    @property
    def calibration_stale(self) -> bool:
        return rules.calibration_stale(
            effective_model=self.effective_model(), calibrated_model=self.calibrated_model
        )


def server_model() -> choices.ModelChoice | None:
    """The server's default model (QUORUM_LLM_*), or None when it has none."""
    return choices.model_choice(
        provider=settings.QUORUM_LLM_PROVIDER,
        name=settings.QUORUM_LLM_MODEL,
        base_url=settings.QUORUM_LLM_BASE_URL,
        api_key_env="",
        default=None,
    )


def reviewer_model(config: ReviewerConfig | None) -> choices.ModelChoice | None:
    """The one place that decides which model a reviewer runs on: its own settings over the
    server's (`config` None: a reviewer without settings, such as a verification lens)."""
    if config is None:
        return server_model()
    return choices.model_choice(
        provider=config.model_provider,
        name=config.model_name,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        sealed_key=config.api_key_sealed,
        default=server_model(),
    )


class FewShotProposal(models.Model):
    """A few-shot proposed for a reviewer from a person's decision on one of its findings
    (docs/domain-rules.md#few-shots-from-decisions). Its text is what an admin accepts
    into `ReviewerConfig.few_shots`, edits first, or rejects; a proposal is decided once."""

    Status = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Status", {s.name: (s.value, s.value) for s in few_shots.ProposalStatus}
    )
    Outcome = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Outcome", {o.name: (o.value, o.value) for o in few_shots.Outcome}
    )

    reviewer = models.ForeignKey(
        ReviewerConfig, on_delete=models.CASCADE, related_name="few_shot_proposals"
    )
    # The finding decided; deleting its review (a repository's purge) deletes the proposal.
    source_node = models.ForeignKey(
        "reviews.ReviewNode", on_delete=models.CASCADE, related_name="+"
    )
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    rule = models.CharField(max_length=100, blank=True)
    path = models.CharField(max_length=1024, blank=True)
    # The few-shot as proposed (or as an admin edited it): the code is redacted.
    excerpt = models.TextField()
    good = models.TextField()
    bad = models.TextField(blank=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=few_shots.ProposalStatus.PROPOSED.value
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["reviewer", "source_node"], name="few_shot_proposal_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.reviewer.key}: {self.outcome} #{self.source_node_id}"

    @property
    def kind(self) -> str:
        """ "good" (the reviewer was right) or "bad" (a person decided otherwise)."""
        return "good" if few_shots.Outcome(self.outcome) in few_shots.GOOD else "bad"

    @property
    def outcome_words(self) -> str:
        return few_shots.OUTCOME_WORDS[few_shots.Outcome(self.outcome)]

    def shot(self) -> dict[str, str]:
        return {"excerpt": self.excerpt, "good": self.good, "bad": self.bad}


def workspace_model_configured(workspace: Workspace) -> bool:
    """Whether any model reviewer of the workspace can run: the server has a model, or one of
    its reviewers names both a provider and a model of its own."""
    if server_model() is not None:
        return True
    return workspace.reviewers.exclude(model_provider="").exclude(model_name="").exists()


class Repository(models.Model):
    class Kind(models.TextChoices):
        GITHUB = "github", "GitHub"
        LOCAL = "local", "Local path"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="repositories")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    full_name = models.CharField(max_length=141, blank=True)
    local_path = models.CharField(max_length=1024, blank=True)
    base_branch = models.CharField(max_length=200, default="main")
    auto_review = models.BooleanField(default=False)
    # Draft pull requests are reviewed automatically only when the repository says so.
    review_drafts = models.BooleanField(default=False)
    # The `Quorum` check run concludes a Hold as failure (blocks a merge that requires it)
    # rather than neutral.
    hold_fails_check = models.BooleanField(default=False)
    # Disconnecting archives: reviews stay readable, webhooks are ignored, reconnecting restores.
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Not a column: set on the instance that reconnecting returns, to say what came back.
    restored: dict[str, int] | None = None

    class Meta:
        ordering = ["kind", "full_name", "local_path"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "full_name"],
                condition=models.Q(kind="github"),
                name="repository_github_unique",
            ),
            models.UniqueConstraint(
                fields=["workspace", "local_path"],
                condition=models.Q(kind="local"),
                name="repository_local_unique",
            ),
        ]

    def __str__(self) -> str:
        # People read a repository's name; a local one's server path is settings' business.
        return self.full_name or PurePosixPath(self.local_path).name or self.local_path

    def snapshot(self) -> dict:
        return {
            "kind": self.kind,
            "name": str(self),
            **({"path": self.local_path} if self.local_path else {}),
            "base_branch": self.base_branch,
            "auto_review": self.auto_review,
            "review_drafts": self.review_drafts,
            "hold_fails_check": self.hold_fails_check,
        }


class Tombstone(models.Model):
    """What a deleted object was, so links to it (audit rows, bookmarks) explain instead of 404."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="tombstones")
    kind = models.CharField(max_length=50)  # the audit target type: reviewspace, repository, …
    object_id = models.CharField(max_length=64)
    label = models.CharField(max_length=300)
    counts = SchemaJSONField(schema=rules.TombstoneCounts, default=dict, blank=True)
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    deleted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id"], name="tombstone_unique")
        ]

    def __str__(self) -> str:
        return f"deleted {self.kind} {self.label}"


class GitHubInstallation(models.Model):
    """A GitHub App installation bound to one workspace by a server operator: the workspace may
    connect that installation's repositories and receives their webhooks, and nobody else does."""

    installation_id = models.PositiveBigIntegerField(unique=True)
    account_login = models.CharField(max_length=100, blank=True)
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="github_installations"
    )
    bound_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"installation {self.installation_id} ({self.account_login}) → {self.workspace}"


class RepositoryGrant(models.Model):
    """With a server-wide token every repository looks reachable, so a server operator grants
    each workspace the repositories it may connect."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="repository_grants"
    )
    full_name = models.CharField(max_length=141)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "full_name"], name="repository_grant_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.full_name} → {self.workspace}"


class LocalRootGrant(models.Model):
    """A directory on the server under which this workspace may connect local repositories."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="local_root_grants"
    )
    path = models.CharField(max_length=1024)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "path"], name="local_root_grant_unique")
        ]

    def __str__(self) -> str:
        return f"{self.path} → {self.workspace}"


class ApiToken(models.Model):
    """A personal API token. Only its SHA-256 digest is stored; the secret is shown once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    # Set: the token is an agent's (e.g. "claude-code on alice's laptop"), acting for `user`
    # with at most a reviewer's role, named as that agent in the audit trail and on findings.
    agent_name = models.CharField(max_length=40, blank=True)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def digest_of(secret: str) -> str:
        return hashlib.sha256(secret.encode("utf-8")).hexdigest()
