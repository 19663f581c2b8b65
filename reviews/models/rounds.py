"""Pull requests, their review spaces, rounds, pipeline steps and reviewer streams: the
rows a review runs on, and the deliveries and sweeps that start and recover it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from config.typed_json import SchemaJSONField
from reviews.domain import stored_shapes as shapes
from reviews.domain import types as t
from reviews.domain.round_states import RoundState
from reviews.domain.round_stats import RoundFacts, RoundStats, StageName
from reviews.domain.space_status import SpaceStatus
from reviews.domain.step_states import StepState
from reviews.domain.stream_states import StreamState
from reviews.models.choices import enum_choices


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
    tier = models.CharField(max_length=16, choices=enum_choices(t.Tier))
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
    # When a coordinator's message was last sent for it and not yet taken (a coordinator's
    # claim clears it): the sweeper leaves a round whose message is still queued alone for a
    # grace that grows with the queue (reviews/domain/admission.py).
    advance_sent_at = models.DateTimeField(null=True, blank=True)
    # Its place in the line of rounds waiting for admission, when not its own creation: a
    # round that superseded an open one keeps that one's place (reviews/services/rounds.py).
    queued_since = models.DateTimeField(null=True, blank=True)
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


class WebhookDelivery(models.Model):
    """Each GitHub delivery id is processed once, even when GitHub redelivers it."""

    delivery_id = models.CharField(max_length=64, unique=True)
    event = models.CharField(max_length=40)
    action = models.CharField(max_length=40, blank=True)
    outcome = models.CharField(max_length=200, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.event}/{self.action} {self.delivery_id}"


class PipelineSweep(models.Model):
    """One row: when the next sweep for stalled rounds is due. Workers take the turn with one
    conditional UPDATE, so the cluster sweeps once per interval without Redis or a lock holder."""

    name = models.CharField(max_length=20, unique=True)
    next_at = models.DateTimeField()
    last_swept_at = models.DateTimeField(null=True, blank=True)
    last_dispatched = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"sweep {self.name} due {self.next_at:%H:%M:%S}"


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
