"""What reviewers found and what was decided: review nodes and their confirmations, axes,
verdicts and their changes, remembered facts, SARIF uploads, and each person's progress
through cohorts and files.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from config.api_types import JsonObject
from config.typed_json import SchemaJSONField
from reviews.domain import stored_shapes as shapes
from reviews.domain import types as t
from reviews.domain.node_tags import NodeTags
from reviews.models.choices import enum_choices
from reviews.models.rounds import ReviewerStream, ReviewRound, ReviewSpace


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
    type = models.CharField(max_length=20, choices=enum_choices(t.NodeType))
    priority = models.CharField(max_length=2, choices=enum_choices(t.Priority))
    category = models.CharField(max_length=30, choices=enum_choices(t.Category))
    severity = models.CharField(max_length=10, choices=enum_choices(t.Severity))
    effort = models.CharField(max_length=10, choices=enum_choices(t.Effort))
    path = models.CharField(max_length=1024, blank=True)
    start_line = models.PositiveIntegerField(null=True, blank=True)
    end_line = models.PositiveIntegerField(null=True, blank=True)
    side = models.CharField(max_length=5, choices=enum_choices(t.Side), default=t.Side.RIGHT.value)
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
    axis = models.CharField(max_length=20, choices=enum_choices(t.AxisName))
    result = models.CharField(max_length=12, choices=enum_choices(t.AxisResult))
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
    level = models.CharField(max_length=5, choices=enum_choices(t.VerdictLevel))
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
    old_level = models.CharField(max_length=5, choices=enum_choices(t.VerdictLevel))
    new_level = models.CharField(max_length=5, choices=enum_choices(t.VerdictLevel))
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
