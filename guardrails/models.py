from __future__ import annotations

from django.db import models


class AppendOnlyError(RuntimeError):
    """Audit events are never changed or removed once written (DESIGN.md §3.12)."""


class AuditEventQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("audit events are append-only")

    def delete(self):
        raise AppendOnlyError("audit events are append-only")


class AuditChainHead(models.Model):
    """The tip of one hash chain; locked with SELECT … FOR UPDATE so writers cannot fork it."""

    chain = models.CharField(max_length=64, unique=True)
    seq = models.PositiveBigIntegerField(default=0)
    last_hash = models.CharField(max_length=64)

    def __str__(self) -> str:
        return f"{self.chain}@{self.seq}"


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
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField()
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

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
