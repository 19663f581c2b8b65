"""What left Quorum for GitHub: published reviews and comments, and the tickets reviewers
asked people to open.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from config.typed_json import SchemaJSONField
from reviews.domain import stored_shapes as shapes
from reviews.domain import types as t
from reviews.domain.tickets import TicketStatus
from reviews.models.findings import ReviewNode
from reviews.models.rounds import ReviewerStream, ReviewRound, ReviewSpace


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
