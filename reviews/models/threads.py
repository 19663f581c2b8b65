"""Discussion threads on findings: messages and their earlier revisions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from reviews.domain.threads import ProposalState as ThreadProposalState
from reviews.domain.threads import Source as MessageSource
from reviews.models.findings import ReviewNode
from reviews.models.rounds import ReviewerStream, ReviewSpace


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
