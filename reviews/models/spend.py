"""What model calls cost: each call's tokens and the prices they are billed at."""

from __future__ import annotations

from django.db import models

from reviews.domain.spend import CallRole
from reviews.models.rounds import ReviewRound


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
