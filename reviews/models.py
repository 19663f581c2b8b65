"""Persistence of review spaces, rounds, streams, nodes, axes and verdicts.

The rules live in reviews/domain. Each state and status column has one writer, a function
that applies its transition table (tests/test_single_writers.py lists them and checks that
nothing else writes one); a pipeline step's state is written by the pipeline runner.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from config.api_types import JsonObject
from config.typed_json import SchemaJSONField
from reviews.domain import stored_shapes as shapes
from reviews.domain import types as t
from reviews.domain.node_tags import NodeTags
from reviews.domain.round_states import RoundState
from reviews.domain.round_stats import RoundFacts, RoundStats, StageName
from reviews.domain.space_status import SpaceStatus
from reviews.domain.spend import CallRole
from reviews.domain.step_states import StepState
from reviews.domain.stream_states import StreamState
from reviews.domain.threads import ProposalState as ThreadProposalState
from reviews.domain.threads import Source as MessageSource
from reviews.domain.tickets import TicketStatus


def _choices(enum) -> list[tuple[str, str]]:
    return [(m.value, m.value) for m in enum]


class PullRequest(models.Model):
    """A GitHub pull request (number set) or a local pair of refs (number null)."""

    repository = models.ForeignKey(
        "workspaces.Repository", on_delete=models.CASCADE, related_name="pull_requests"
    )
    number = models.PositiveIntegerField(null=True, blank=True)
    title = models.CharField(max_length=300, blank=True)
    body = models.TextField(blank=True)
    author = models.CharField(max_length=100, blank=True)
    base_ref = models.CharField(max_length=255)
    head_ref = models.CharField(max_length=255)
    base_sha = models.CharField(max_length=40, blank=True)
    head_sha = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "number"],
                condition=models.Q(number__isnull=False),
                name="pull_request_number_unique",
            ),
            models.UniqueConstraint(
                fields=["repository", "base_ref", "head_ref"],
                condition=models.Q(number__isnull=True),
                name="pull_request_local_refs_unique",
            ),
        ]

    def __str__(self) -> str:
        if self.number is not None:
            return f"{self.repository}#{self.number}"
        return f"{self.repository} {self.base_ref}…{self.head_ref}"


class ReviewSpace(models.Model):
    """One per pull request: every reviewer, person and tool meets in the same room
    (docs/domain-rules.md#review-spaces-and-streams)."""

    Status = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Status", {s.name: (s.value, s.value) for s in SpaceStatus}
    )

    pull_request = models.OneToOneField(PullRequest, on_delete=models.CASCADE, related_name="space")
    # Denormalised from the repository so permission-scoped lookups are one join.
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="review_spaces"
    )
    status = models.CharField(
        max_length=20, choices=Status.choices, default=SpaceStatus.REQUESTED.value
    )
    # Two rounds without approval: a person decides. Set and cleared by reviews/services only.
    flagged_for_human = models.BooleanField(default=False)
    flagged_at = models.DateTimeField(null=True, blank=True)
    flag_reason = models.TextField(blank=True)
    # The newest round a person had seen when they last cleared the flag: those rounds do not
    # count towards raising it again.
    flag_seen_through = models.PositiveIntegerField(default=0)
    # The task or issue the change implements, given once (by whoever asked for a review or a
    # person supplying it) and carried into every round that is not given another.
    original_request = models.TextField(blank=True)
    # Why the review ended, when it ended by something other than a publish: merged, closed,
    # or done (a person, with `closed_note`).
    closed_reason = models.CharField(max_length=20, blank=True)
    closed_note = models.TextField(blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["workspace", "-updated_at"], name="space_ws_updated_idx")]

    def __str__(self) -> str:
        return f"space {self.pk} for {self.pull_request}"


class ReviewRound(models.Model):
    State = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "State", {s.name: (s.value, s.value) for s in RoundState}
    )

    space = models.ForeignKey(ReviewSpace, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField()
    base_sha = models.CharField(max_length=40, blank=True)
    head_sha = models.CharField(max_length=40)
    tier = models.CharField(max_length=16, choices=_choices(t.Tier))
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    stage = models.CharField(max_length=40, blank=True)
    original_request = models.TextField(blank=True)
    # The unified diff the round reviews (merge base → head), kept so every stage and worker
    # reads the same change without asking git or GitHub again.
    diff = models.TextField(blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    # Who holds the lease: a coordinator renews and releases only its own claim, never one a
    # second coordinator took after the first lost the database for longer than the lease.
    lease_token = models.CharField(max_length=32, blank=True)
    # What the stages found: classification, cohorts, consolidation, critic, panel, tokens, …
    stats = SchemaJSONField(schema=RoundStats, reads="model", default=dict, blank=True)
    # What the pipeline's stage gates are evaluated against, set by the prepare stage (null
    # until it ran) and by the critic (`followup`).
    facts = SchemaJSONField(schema=RoundFacts, reads="model", null=True, blank=True)
    # The inline stages that finished: the coordinator runs each once (fan-out stages keep
    # their progress in PipelineStep rows).
    done_stages = SchemaJSONField(schema=list[StageName], default=list, blank=True)
    error = models.TextField(blank=True)
    # A re-run reviews the same head again; a superseded round names the round that replaced it.
    rerun_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns"
    )
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The round's `Quorum` check run on GitHub (reviews/services/check_runs.py, its one writer):
    # claimed before it is created, so a retry after a lost answer looks for it instead of
    # creating a second; its id once GitHub answered.
    check_run_claimed_at = models.DateTimeField(null=True, blank=True)
    check_run_id = models.BigIntegerField(null=True, blank=True)
    # A digest of what GitHub was last told (check run or commit status): a sync that would
    # say the same again writes nothing.
    check_run_posted = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["space", "number"]
        constraints = [
            models.UniqueConstraint(fields=["space", "number"], name="round_number_unique")
        ]

    def __str__(self) -> str:
        return f"round {self.number} of space {self.space_id}"

    @property
    def fast_exit(self) -> bool:
        """A docs-only or formatting-only change, approved with no reviewer."""
        return self.facts is not None and self.facts.fast_exit


class PipelineStep(models.Model):
    """One unit of fan-out work in a stage (a reviewer, a panel finding). The rows are the
    pipeline's durable progress: a stage advances only when all of its steps are terminal."""

    State = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "State", {s.name: (s.value, s.value) for s in StepState}
    )

    round = models.ForeignKey("ReviewRound", on_delete=models.CASCADE, related_name="steps")
    stage = models.CharField(max_length=20)
    key = models.CharField(max_length=80)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    stream = models.ForeignKey(
        "ReviewerStream", null=True, blank=True, on_delete=models.CASCADE, related_name="steps"
    )
    node = models.ForeignKey(
        "ReviewNode", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # A panel step's group (reviews/domain/panel.py PANEL_GROUP_SIZE): the nodes' ids, and
    # those not put to lens 1 because an analyzer's rule stands for it.
    nodes = SchemaJSONField(schema=list[int], default=list, blank=True)
    rule_reachable = SchemaJSONField(schema=list[int], default=list, blank=True)
    result = SchemaJSONField(schema=shapes.StepResult, default=dict, blank=True)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["round", "stage", "key"], name="step_unique")
        ]
        indexes = [models.Index(fields=["round", "stage", "state"], name="step_round_stage_idx")]

    def __str__(self) -> str:
        return f"{self.stage}/{self.key} ({self.state})"


class ReviewerStream(models.Model):
    """One reviewer's named stream inside a round. `agent` is the identity consensus checks."""

    Kind = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Kind", {k.name: (k.value, k.label) for k in t.StreamKind}
    )
    State = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "State", {s.name: (s.value, s.value) for s in StreamState}
    )

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="streams")
    name = models.CharField(max_length=60)
    agent = models.CharField(max_length=60)
    dimension = models.CharField(max_length=20, blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.MODEL)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    accepted = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    rejection_reasons = SchemaJSONField(schema=shapes.RejectionReasons, default=list, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    # Model calls its runs made (every attempt's), against its turn budget (0: not a model run).
    turns = models.PositiveSmallIntegerField(default=0)
    turn_budget = models.PositiveSmallIntegerField(default=0)
    coverage_note = models.TextField(blank=True)  # the closing's summary, as text
    # A model reviewer's closing statement: what it covered (reviews/domain/closings.py).
    closing = SchemaJSONField(schema=shapes.StreamClosing, null=True, blank=True, reads="model")
    # Cross-reviewer notes, comments and tickets the reviewer left (routed by the lead pass).
    notes = SchemaJSONField(schema=shapes.StreamNotes, default=list, blank=True)
    refused_calls = models.PositiveIntegerField(default=0)
    redactions = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["round", "name"]
        constraints = [models.UniqueConstraint(fields=["round", "name"], name="stream_name_unique")]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent})"


class ReviewNode(models.Model):
    """A finding as data (docs/domain-rules.md#findings-as-data). `payload_key` makes recording
    idempotent per stream."""

    Status = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Status", {s.name: (s.value, s.value) for s in t.NodeStatus}
    )

    space = models.ForeignKey(ReviewSpace, on_delete=models.CASCADE, related_name="nodes")
    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="nodes")
    stream = models.ForeignKey(ReviewerStream, on_delete=models.CASCADE, related_name="nodes")
    payload_key = models.CharField(max_length=64)
    reasoning = models.TextField(blank=True)
    type = models.CharField(max_length=20, choices=_choices(t.NodeType))
    priority = models.CharField(max_length=2, choices=_choices(t.Priority))
    category = models.CharField(max_length=30, choices=_choices(t.Category))
    severity = models.CharField(max_length=10, choices=_choices(t.Severity))
    effort = models.CharField(max_length=10, choices=_choices(t.Effort))
    path = models.CharField(max_length=1024, blank=True)
    start_line = models.PositiveIntegerField(null=True, blank=True)
    end_line = models.PositiveIntegerField(null=True, blank=True)
    side = models.CharField(max_length=5, choices=_choices(t.Side), default=t.Side.RIGHT.value)
    replacement_lines = SchemaJSONField(schema=shapes.ReplacementLines, null=True, blank=True)
    fix_diff = models.TextField(blank=True)
    fix_prompt = models.TextField(blank=True)
    confidence = models.FloatField()
    title = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    map_anchor = models.CharField(max_length=200, blank=True)
    triage_flags = SchemaJSONField(schema=shapes.TriageFlags, default=dict, blank=True)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=t.NodeStatus.OPEN.value
    )
    fingerprint = models.CharField(max_length=64, blank=True)
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates"
    )
    credited_agents = SchemaJSONField(schema=shapes.AgentNames, default=list, blank=True)
    # Lead-pass links, panel outcome, analyzer evidence, … (reviews/domain/node_tags.py)
    tags = SchemaJSONField(schema=NodeTags, reads="model", default=dict, blank=True)
    # A person's last resolve or dismiss, shown on the card and in the report (a reopen clears
    # it); written with the status by reviews/services/nodes.py.
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision_reason = models.TextField(blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["priority", "-confidence", "id"]
        constraints = [
            models.UniqueConstraint(fields=["stream", "payload_key"], name="node_payload_unique")
        ]
        indexes = [
            models.Index(fields=["round", "status"], name="node_round_status_idx"),
            models.Index(fields=["space", "fingerprint"], name="node_space_fp_idx"),
            models.Index(fields=["round", "path"], name="node_round_path_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.priority} {self.title}"

    @property
    def anchored(self) -> bool:
        return bool(self.path) and self.start_line is not None


class NodeConfirmation(models.Model):
    """A peer's confirmation, or a verification lens's verdict on a node
    (docs/domain-rules.md#consensus-and-peer-confirmation)."""

    Lens = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Lens", {x.name: (x.value, x.label) for x in t.ConfirmationLens}
    )

    node = models.ForeignKey(ReviewNode, on_delete=models.CASCADE, related_name="confirmations")
    agent = models.CharField(max_length=60)
    lens = models.CharField(max_length=20, choices=Lens.choices, default=Lens.PEER)
    verdict = models.CharField(max_length=30)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["node", "agent", "lens"], name="confirmation_unique")
        ]

    def __str__(self) -> str:
        return f"{self.agent} ({self.lens}): {self.verdict}"


class AxisResult(models.Model):
    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="axes")
    axis = models.CharField(max_length=20, choices=_choices(t.AxisName))
    result = models.CharField(max_length=12, choices=_choices(t.AxisResult))
    gated = models.BooleanField(default=False)
    source = models.CharField(max_length=20)  # tokens | deterministic | submitted
    # Free-form per axis (what was compared, what to do to clear it): any JSON object.
    details = SchemaJSONField(schema=JsonObject, default=dict, blank=True)
    evidence_url = models.URLField(blank=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["round", "axis"]
        constraints = [models.UniqueConstraint(fields=["round", "axis"], name="axis_unique")]

    def __str__(self) -> str:
        return f"{self.axis}: {self.result}"


class Verdict(models.Model):
    round = models.OneToOneField(ReviewRound, on_delete=models.CASCADE, related_name="verdict")
    level = models.CharField(max_length=5, choices=_choices(t.VerdictLevel))
    rule = models.CharField(max_length=300)
    # Null when the level rests on missing data (a gated axis nobody computed).
    confidence = models.FloatField(null=True, blank=True)
    contributing = SchemaJSONField(schema=shapes.ContributingNodes, default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        if self.confidence is None:
            return f"{self.level} (missing data)"
        return f"{self.level} ({self.confidence:.2f})"


class VerdictChange(models.Model):
    """One change of a round's verdict after a decision: old → new, why, and who decided."""

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="verdict_changes")
    old_level = models.CharField(max_length=5, choices=_choices(t.VerdictLevel))
    new_level = models.CharField(max_length=5, choices=_choices(t.VerdictLevel))
    old_rule = models.CharField(max_length=300)
    new_rule = models.CharField(max_length=300)
    old_confidence = models.FloatField(null=True, blank=True)
    new_confidence = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=300)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round", "id"]

    def __str__(self) -> str:
        return f"{self.old_level} → {self.new_level} ({self.reason})"


class MemoryFact(models.Model):
    """Workspace memory: non-binding hints for later reviews, e.g. a dismissal
    (docs/domain-rules.md#dismissal-memory)."""

    class Kind(models.TextChoices):
        SUPPRESSION = "suppression", "suppression hint"

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="memory_facts"
    )
    repository = models.ForeignKey(
        "workspaces.Repository", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    fingerprint = models.CharField(max_length=64, blank=True)
    category = models.CharField(max_length=30, blank=True)
    path_pattern = models.CharField(max_length=1024, blank=True)
    statement = models.TextField()
    confidence = models.FloatField()
    binding = models.BooleanField(default=False)
    source_node = models.ForeignKey(
        ReviewNode, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["workspace", "repository", "kind"], name="memory_scope_idx")
        ]

    def __str__(self) -> str:
        return self.statement[:80]


class WebhookDelivery(models.Model):
    """Each GitHub delivery id is processed once, even when GitHub redelivers it."""

    delivery_id = models.CharField(max_length=64, unique=True)
    event = models.CharField(max_length=40)
    action = models.CharField(max_length=40, blank=True)
    outcome = models.CharField(max_length=200, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.event}/{self.action} {self.delivery_id}"


class PublishRecord(models.Model):
    """One GitHub review per round, whatever the selection: the partial unique key makes it
    idempotent (a failed attempt does not count; rows from before the rule are kept, marked
    `legacy_duplicate`)."""

    State = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "State", {s.name: (s.value, s.label) for s in t.PublishState}
    )
    Path = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Path", {p.name: (p.value, p.label) for p in t.PublishPath}
    )

    space = models.ForeignKey(ReviewSpace, on_delete=models.CASCADE, related_name="publications")
    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="publications")
    selection = models.CharField(max_length=20)
    approve_on_ship = models.BooleanField(default=False)
    head_sha = models.CharField(max_length=40)
    state = models.CharField(max_length=12, choices=State.choices, default=State.CLAIMED)
    path = models.CharField(max_length=20, choices=Path.choices, blank=True)
    event = models.CharField(max_length=20, blank=True)
    github_review_id = models.BigIntegerField(null=True, blank=True)
    html_url = models.URLField(max_length=500, blank=True)
    plan = SchemaJSONField(schema=shapes.PublishPlanSummary, default=dict, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approval_request = models.ForeignKey(
        "guardrails.ApprovalRequest",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    legacy_duplicate = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    posted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["round"],
                condition=~models.Q(state=t.PublishState.FAILED.value)
                & models.Q(legacy_duplicate=False),
                name="publish_once_per_round",
            )
        ]

    def __str__(self) -> str:
        return f"publish {self.selection} of {self.round} ({self.state})"


class PublishedComment(models.Model):
    """One inline comment of a published review, as GitHub numbered it: which finding it
    carries, so a reply to it on GitHub lands in that finding's thread. Written by
    reviews/services/publishing.py once GitHub lists the review's comments."""

    record = models.ForeignKey(PublishRecord, on_delete=models.CASCADE, related_name="comments")
    space = models.ForeignKey(ReviewSpace, on_delete=models.CASCADE, related_name="+")
    node = models.ForeignKey(ReviewNode, on_delete=models.CASCADE, related_name="github_comments")
    github_comment_id = models.BigIntegerField()
    html_url = models.URLField(max_length=500, blank=True)
    body = models.TextField()  # as posted: a comment that quotes it is about this finding

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["space", "github_comment_id"], name="published_comment_once"
            )
        ]

    def __str__(self) -> str:
        return f"GitHub comment {self.github_comment_id} of node {self.node_id}"


class CodeIndexRecord(models.Model):
    """A repository's code index at one commit, kept so later rounds reuse it."""

    repository = models.ForeignKey(
        "workspaces.Repository", on_delete=models.CASCADE, related_name="code_indexes"
    )
    commit_sha = models.CharField(max_length=40)
    indexed = models.BooleanField()
    reason = models.CharField(max_length=300, blank=True)
    data = SchemaJSONField(schema=shapes.StoredCodeIndex)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["repository", "commit_sha"], name="code_index_unique")
        ]

    def __str__(self) -> str:
        return f"index of {self.repository} at {self.commit_sha[:10]}"


class CohortProgress(models.Model):
    """A person's reading progress, keyed by the content-derived cohort key so it survives a
    rebase, a force-push and a new round."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    space = models.ForeignKey(ReviewSpace, on_delete=models.CASCADE, related_name="progress")
    cohort_key = models.CharField(max_length=64)
    read_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "space", "cohort_key"], name="progress_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} read {self.cohort_key[:10]}"


class FileViewed(models.Model):
    """A person marked a changed file as viewed. Keyed by the file's content
    (reviews/domain/file_tree.py `file_view_key`: path + hash of its changes), so the mark
    carries over to a new round where the file did not change and is gone where it did."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    space = models.ForeignKey(ReviewSpace, on_delete=models.CASCADE, related_name="viewed_files")
    file_key = models.CharField(max_length=64)
    path = models.TextField()  # for people and the admin; the key is what is matched
    viewed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "space", "file_key"], name="file_viewed_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} viewed {self.path}"


class PipelineSweep(models.Model):
    """One row: when the next sweep for stalled rounds is due. Workers take the turn with one
    conditional UPDATE, so the cluster sweeps once per interval without Redis or a lock holder."""

    name = models.CharField(max_length=20, unique=True)
    next_at = models.DateTimeField()
    last_swept_at = models.DateTimeField(null=True, blank=True)
    last_dispatched = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"sweep {self.name} due {self.next_at:%H:%M:%S}"


class ReviewerTicket(models.Model):
    """A ticket a reviewer proposed (`add_note`, kind ticket), and what a person decided."""

    Status = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Status", {s.name: (s.value, s.label) for s in TicketStatus}
    )

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="tickets")
    stream = models.ForeignKey(ReviewerStream, on_delete=models.CASCADE, related_name="tickets")
    note_index = models.PositiveIntegerField()  # its place in the stream's `notes`
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    issue_number = models.PositiveIntegerField(null=True, blank=True)
    issue_url = models.URLField(max_length=500, blank=True)
    approval_request = models.ForeignKey(
        "guardrails.ApprovalRequest",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round", "stream", "note_index"]
        constraints = [
            models.UniqueConstraint(fields=["stream", "note_index"], name="ticket_note_unique")
        ]

    def __str__(self) -> str:
        return f"ticket {self.title} ({self.status})"


class ModelCall(models.Model):
    """One agent run's spend: the ledger every model call of a round writes to, failed and
    abstaining runs included (reviews/domain/spend.py). Written only by
    `reviews.services.spend.model_calls_record`."""

    Role = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Role", {r.name: (r.value, r.value) for r in CallRole}
    )

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="model_calls")
    role = models.CharField(max_length=10, choices=Role.choices)
    name = models.CharField(max_length=60)  # the reviewer's stream, the lens, "critic", …
    model = models.CharField(max_length=120)
    provider = models.CharField(max_length=20)
    input_tokens = models.PositiveIntegerField(default=0)  # cached input included
    cached_input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    # The provider reported no usage: the figures are our o200k count of what was sent.
    counted_locally = models.BooleanField(default=False)
    failed = models.BooleanField(default=False)  # the run raised; what it spent still counts
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round", "created_at", "pk"]
        indexes = [models.Index(fields=["created_at"], name="model_call_created_idx")]

    def __str__(self) -> str:
        return f"{self.role} {self.name}: {self.input_tokens}+{self.output_tokens} tokens"


class ModelPrice(models.Model):
    """What a workspace pays per million tokens of one model, set by an admin."""

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="model_prices"
    )
    model = models.CharField(max_length=120)
    input_per_million = models.DecimalField(max_digits=12, decimal_places=6)
    cached_input_per_million = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    output_per_million = models.DecimalField(max_digits=12, decimal_places=6)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workspace", "model"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "model"], name="model_price_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model}: {self.input_per_million}/{self.output_per_million} per million"


class ThreadMessage(models.Model):
    """One message of a space's conversation, in the thread of a finding, a disagreement or a
    reviewer note (reviews/domain/threads.py names them). Written only by
    reviews/services/threads.py: never deleted one by one, an edit keeps the earlier text."""

    Source = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Source", {s.name: (s.value, s.value) for s in MessageSource}
    )
    ProposalState = models.TextChoices(  # type: ignore[call-overload]
        "ProposalState", {s.name: (s.value, s.value) for s in ThreadProposalState}
    )

    space = models.ForeignKey(ReviewSpace, on_delete=models.CASCADE, related_name="messages")
    subject = models.CharField(max_length=40)  # node:<id>, disagreement:<id>, note:<stream>:<n>
    # The finding a node or disagreement thread hangs on (a disagreement's key is a finding).
    node = models.ForeignKey(
        ReviewNode, null=True, blank=True, on_delete=models.CASCADE, related_name="messages"
    )
    source = models.CharField(max_length=10, choices=Source.choices)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_label = models.CharField(max_length=200)  # as shown: an address, a reviewer, a login
    # A reviewer's answer is posted by its stream.
    stream = models.ForeignKey(
        ReviewerStream, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    in_reply_to = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="answers"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    # GitHub: the review comment this message came from, or the one it was posted as.
    github_comment_id = models.BigIntegerField(null=True, blank=True)
    github_url = models.URLField(max_length=500, blank=True)
    # The top-level review comment of its conversation on GitHub (replies go to it: GitHub
    # refuses a reply to a reply); None for a pull request's own (issue) comments.
    github_root_id = models.BigIntegerField(null=True, blank=True)
    posted_at = models.DateTimeField(null=True, blank=True)  # when Quorum posted it on GitHub
    # A reviewer's offer to change its own finding, and what a person decided.
    proposal_kind = models.CharField(max_length=20, blank=True)
    proposal_priority = models.CharField(max_length=2, blank=True)
    proposal_fix = models.TextField(blank=True)
    proposal_state = models.CharField(max_length=10, choices=ProposalState.choices, blank=True)
    proposal_decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    proposal_decided_at = models.DateTimeField(null=True, blank=True)
    mentions_told_at = models.DateTimeField(null=True, blank=True)  # the mentioned were told
    # A question put to the finding's reviewer: when it was asked, and why no answer came when
    # the model call failed (reviews/services/asking.py). The answer replies to the question.
    asked_at = models.DateTimeField(null=True, blank=True)
    # When a worker took the question (a lease: a second delivery leaves it alone meanwhile).
    ask_started_at = models.DateTimeField(null=True, blank=True)
    ask_error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["space", "pk"]
        indexes = [models.Index(fields=["space", "subject"], name="thread_subject_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["space", "github_comment_id"],
                condition=models.Q(github_comment_id__isnull=False),
                name="thread_github_comment_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.author_label} on {self.subject}"


class ThreadMessageRevision(models.Model):
    """The text a message had before an edit: an edit is visible, never silent."""

    message = models.ForeignKey(ThreadMessage, on_delete=models.CASCADE, related_name="revisions")
    body = models.TextField()
    replaced_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["message", "pk"]

    def __str__(self) -> str:
        return f"revision of message {self.message_id}"


class SarifUpload(models.Model):
    """A SARIF log from CI, accepted by the API and recorded on its round by a task.

    The request only checks the log (schema, round, size) and stores it; matching thousands
    of results to the diff and merging them runs in the background, so an upload never holds a
    web worker. `queued` turns into `done` or `failed` in one transaction: a worker that dies
    half-way leaves it `queued`, and the sweeper queues it again.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        DONE = "done"
        FAILED = "failed"

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="sarif_uploads")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    document = SchemaJSONField(schema=JsonObject)
    results = models.PositiveIntegerField()
    runs = SchemaJSONField(schema=list[JsonObject], default=list, blank=True)
    verdict = models.CharField(max_length=10, blank=True)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["round", "pk"]
        indexes = [models.Index(fields=["state", "created_at"], name="sarif_upload_state_idx")]

    def __str__(self) -> str:
        return f"SARIF upload {self.pk} ({self.state})"
