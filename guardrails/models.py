from __future__ import annotations

from django.conf import settings
from django.db import models

from config.api_types import JsonObject
from config.typed_json import SchemaJSONField
from guardrails import rules


class AppendOnlyError(RuntimeError):
    """Audit events are never changed or removed once written."""


class AuditEventQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("audit events are append-only")

    def delete(self):
        raise AppendOnlyError("audit events are append-only")


class AuditChainHead(models.Model):
    """The tip of one hash chain; locked with SELECT … FOR UPDATE so writers cannot fork it.

    `mac` seals (chain, seq, last_hash, legacy_seq) with the audit key, so a rewound head (to
    hide a deleted tail) or a widened unkeyed range shows without the key. The application role
    may update this row; it cannot delete it (README "Audit trail").
    """

    chain = models.CharField(max_length=64, unique=True)
    seq = models.PositiveBigIntegerField(default=0)
    last_hash = models.CharField(max_length=64)
    # Entries 1..legacy_seq predate the keyed chain and are plain SHA-256.
    legacy_seq = models.PositiveBigIntegerField(default=0)
    mac = models.CharField(max_length=64, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.chain}@{self.seq}"


class AuditVerification(models.Model):
    """The last verified prefix of a chain, so the audit page only walks newer entries.

    A separate row, not fields on the head: the head is locked by every writer and the page
    must not queue behind them. `mac` seals the checkpoint with the audit key.
    """

    chain = models.CharField(max_length=64, unique=True)
    seq = models.PositiveBigIntegerField()
    hash = models.CharField(max_length=64)
    mac = models.CharField(max_length=64)
    verified_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.chain} verified to #{self.seq}"


class AuditEvent(models.Model):
    class ActorKind(models.TextChoices):
        USER = "user", "User"
        SYSTEM = "system", "System"
        APP = "app", "App identity"
        ANONYMOUS = "anonymous", "Anonymous"

    chain = models.CharField(max_length=64)
    seq = models.PositiveBigIntegerField()
    # PROTECT: a workspace with history cannot vanish from under its audit trail.
    workspace = models.ForeignKey(
        "workspaces.Workspace", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # A plain id, not a foreign key: deleting a user must not rewrite history (SET_NULL would
    # be an UPDATE, which the database refuses).
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices)
    actor_id = models.BigIntegerField(null=True, blank=True)
    actor_label = models.CharField(max_length=254)
    action = models.CharField(max_length=100)
    target_type = models.CharField(max_length=50, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_label = models.CharField(max_length=300, blank=True)
    # What the action names, as the hash covers it: any JSON object (its keys vary by action).
    payload = SchemaJSONField(schema=JsonObject, default=dict)
    created_at = models.DateTimeField()
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    # Which key HMAC'd this entry (a fingerprint, not the key); empty for the plain SHA-256
    # entries written before the chain was keyed.
    key_id = models.CharField(max_length=16, blank=True, default="")

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["chain", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["chain", "seq"], name="audit_event_chain_seq_unique")
        ]
        indexes = [
            models.Index(fields=["workspace", "-created_at"], name="audit_ws_time_idx"),
            models.Index(fields=["workspace", "action"], name="audit_ws_action_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.chain}#{self.seq} {self.action}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("audit events are append-only")

    def content(self) -> dict:
        """What the hash covers: every field but the hashes themselves."""
        return {
            "chain": self.chain,
            "seq": self.seq,
            "workspace_id": self.workspace_id,
            "actor_kind": self.actor_kind,
            "actor_id": self.actor_id,
            "actor_label": self.actor_label,
            "action": self.action,
            "target_type": self.target_type,
            "target_id": self.target_id,
            "target_label": self.target_label,
            "payload": self.payload,
            "created_at": self.created_at.isoformat(),
            "ip": self.ip,
            "user_agent": self.user_agent,
        }


class ActionPolicy(models.Model):
    """Per workspace and action class: allow, require approval (the default) or deny."""

    Policy = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Policy", {p.name: (p.value, p.value.replace("_", " ")) for p in rules.Policy}
    )

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="action_policies"
    )
    action_class = models.CharField(max_length=50)
    policy = models.CharField(
        max_length=20, choices=Policy.choices, default=rules.Policy.REQUIRE_APPROVAL.value
    )
    approvals_required = models.PositiveSmallIntegerField(default=1)
    expires_after_minutes = models.PositiveIntegerField(default=60)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "action_class"], name="policy_unique")
        ]

    def __str__(self) -> str:
        return f"{self.action_class}: {self.policy}"


class ApprovalRequest(models.Model):
    Status = models.TextChoices(  # type: ignore[call-overload]  # stubs lack TextChoices' mapping form
        "Status", {s.name: (s.value, s.value) for s in rules.Status}
    )

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="approval_requests"
    )
    action_class = models.CharField(max_length=50)
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    # The agent that asked for its person (an agent's API token), named wherever the requester
    # is shown; empty when the person asked.
    requester_agent = models.CharField(max_length=100, blank=True)
    target_type = models.CharField(max_length=50)
    target_id = models.CharField(max_length=64)
    target_label = models.CharField(max_length=300)
    # The action's arguments, as approved (its keys vary by action class): any JSON object.
    payload = SchemaJSONField(schema=JsonObject)
    payload_hash = models.CharField(max_length=64)
    head_sha = models.CharField(max_length=40, blank=True)
    status = models.CharField(
        max_length=12, choices=Status.choices, default=rules.Status.PENDING.value
    )
    approvals_required = models.PositiveSmallIntegerField(default=1)
    expires_at = models.DateTimeField()
    result = SchemaJSONField(schema=JsonObject, default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "status"], name="approval_ws_status_idx")]

    def __str__(self) -> str:
        return f"{self.action_class} #{self.pk} ({self.status})"

    @property
    def requester_label(self) -> str:
        """Who asked, as people read it: "agent claude-code for alice@example.com"."""
        email = self.requester.email
        return f"agent {self.requester_agent} for {email}" if self.requester_agent else email


class ApprovalDecision(models.Model):
    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="decisions")
    approver = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decision = models.CharField(max_length=10)  # approve | deny
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["request", "approver"], name="one_decision_per_approver"
            )
        ]

    def __str__(self) -> str:
        return f"{self.approver} {self.decision}"


class Execution(models.Model):
    """At most one per request: the unique row is what makes execution happen once."""

    request = models.OneToOneField(
        ApprovalRequest, on_delete=models.CASCADE, related_name="execution"
    )
    started_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"execution of {self.request_id}"


class ApproverPresence(models.Model):
    """An open approvals-inbox socket. Shared through the database so every web process sees
    every approver; a row not refreshed within the expiry no longer counts."""

    channel_name = models.CharField(max_length=200, unique=True)
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    last_seen = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["workspace", "last_seen"], name="presence_ws_seen_idx")]

    def __str__(self) -> str:
        return f"{self.user} present in {self.workspace_id}"


class ApprovalNotice(models.Model):
    """Who was told that a request waits, how and when: one row per recipient and channel,
    written once the message left (an email handed to the mail server, a webhook accepted)."""

    class Channel(models.TextChoices):
        EMAIL = "email", "email"
        WEBHOOK = "webhook", "webhook"

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="notices")
    channel = models.CharField(max_length=10, choices=Channel.choices)
    # An approver's address, or the webhook's host.
    recipient = models.CharField(max_length=254)
    sent_at = models.DateTimeField()

    class Meta:
        ordering = ["sent_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["request", "channel", "recipient"], name="approval_notice_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.recipient} told of {self.request_id} by {self.channel}"


class ApprovalWebhook(models.Model):
    """A workspace's outgoing webhook for approval requests. The secret signs each delivery;
    it is write-only in the interface (never shown back), so it is kept as given."""

    workspace = models.OneToOneField(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="approval_webhook"
    )
    url = models.URLField(max_length=2048)
    secret = models.CharField(max_length=200)
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"webhook of {self.workspace_id}"


class WebhookDelivery(models.Model):
    """One attempt to deliver a notice to the workspace's webhook: the delivery log."""

    webhook = models.ForeignKey(
        ApprovalWebhook, on_delete=models.CASCADE, related_name="deliveries"
    )
    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="+")
    attempt = models.PositiveSmallIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    accepted = models.BooleanField(default=False)
    attempted_at = models.DateTimeField()

    class Meta:
        ordering = ["-attempted_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["webhook", "request", "attempt"], name="webhook_delivery_attempt_once"
            )
        ]

    def __str__(self) -> str:
        return f"delivery {self.attempt} of {self.request_id}: {self.status_code or self.error}"
