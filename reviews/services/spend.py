"""The spend ledger and the workspace's model prices.

`model_calls_record` is the one writer of `ModelCall`: every agent run of a round (reviewer,
follow-up, lens, critic, lead, ask) is recorded once through it, whether the run finished,
abstained or failed, with what the runtime counted as the responses arrived. `model_price_set` and
`model_price_delete` are the one writers of `ModelPrice` (admins only, audited).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction

from guardrails.audit import Actor, Target, audit_record
from reviews.agents.model_run_types import RunUsageSummary
from reviews.domain.spend import CallRole, parse_price, valid_model_name
from reviews.models import ModelCall, ModelPrice, ReviewRound
from workspaces.models import Workspace
from workspaces.rules import RuleError


@dataclass(frozen=True)
class Spent:
    """One agent run's spend, to record."""

    role: CallRole
    name: str
    model: str
    provider: str
    usage: RunUsageSummary
    failed: bool = False


def model_calls_record(*, review_round: ReviewRound | int, calls: Sequence[Spent]) -> None:
    """Agent runs' spend, in the ledger, in one statement (a panel's lenses end together)."""
    round_id = review_round if isinstance(review_round, int) else review_round.pk
    ModelCall.objects.bulk_create(
        ModelCall(
            round_id=round_id,
            role=c.role.value,
            name=c.name[:60],
            model=c.model[:120],
            provider=c.provider[:20],
            input_tokens=max(c.usage.input_tokens, 0),
            cached_input_tokens=max(min(c.usage.cached_input_tokens, c.usage.input_tokens), 0),
            output_tokens=max(c.usage.output_tokens, 0),
            requests=max(c.usage.requests, 0),
            counted_locally=c.usage.counted_locally,
            failed=c.failed,
        )
        for c in calls
    )


def _price(label: str, text: str, *, required: bool) -> Decimal | None:
    if not text.strip() and not required:
        return None
    value = parse_price(text)
    if value is None:
        raise RuleError(
            f"The {label} price must be a plain number of at most six decimals, 0 or more "
            "(per million tokens), like 2.50."
        )
    return value


def model_price_set(
    *,
    workspace: Workspace,
    actor: Any,
    model: str,
    input_price: str,
    output_price: str,
    cached_input_price: str = "",
    request: Any = None,
) -> ModelPrice:
    """Set what `model` costs this workspace per million tokens (an admin's decision: the
    caller checks the role). Prices are decimals, never negative."""
    model = model.strip()
    if not valid_model_name(model):
        raise RuleError(
            "A model name is letters, digits and . _ - : / @ (no spaces), up to 120 characters."
        )
    values = {
        "input_per_million": _price("input", input_price, required=True),
        "cached_input_per_million": _price("cached input", cached_input_price, required=False),
        "output_per_million": _price("output", output_price, required=True),
    }
    with transaction.atomic():
        price, _ = ModelPrice.objects.update_or_create(
            workspace=workspace, model=model, defaults=values
        )
        audit_record(
            action="spend.price_set",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target.of(workspace),
            payload={
                "model": model,
                **{k: str(v) if v is not None else None for k, v in values.items()},
            },
            request=request,
        )
    return price


def model_price_delete(
    *, workspace: Workspace, actor: Any, model: str, request: Any = None
) -> bool:
    with transaction.atomic():
        deleted, _ = ModelPrice.objects.filter(workspace=workspace, model=model).delete()
        if deleted:
            audit_record(
                action="spend.price_deleted",
                actor=Actor.of(actor),
                workspace=workspace,
                target=Target.of(workspace),
                payload={"model": model},
                request=request,
            )
    return bool(deleted)
