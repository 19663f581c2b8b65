"""Reads of the model-call ledger priced with the workspace's prices: tokens and spend per
round, per review and per workspace (reviews/domain/spend.py does the arithmetic)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.db.models import QuerySet, Sum
from django.db.models.functions import Coalesce

from reviews.domain.spend import CallRecord, CallRole, Price, Spend, spend
from reviews.models import ModelCall, ModelPrice, ReviewRound, ReviewSpace


def _call_records(calls: QuerySet[ModelCall]) -> list[CallRecord]:
    return [record for _, record in _round_records(calls)]


def _round_records(calls: QuerySet[ModelCall]) -> list[tuple[int, CallRecord]]:
    rows = calls.values_list(
        "round_id",
        "role",
        "name",
        "model",
        "input_tokens",
        "cached_input_tokens",
        "output_tokens",
        "requests",
        "counted_locally",
        "created_at",
    )
    return [
        (
            round_id,
            CallRecord(
                role=CallRole(role),
                name=name,
                model=model,
                input_tokens=tin,
                cached_input_tokens=cached,
                output_tokens=tout,
                requests=requests,
                counted_locally=local,
                day=created.date(),
            ),
        )
        for round_id, role, name, model, tin, cached, tout, requests, local, created in rows
    ]


def model_prices(workspace_id: int) -> dict[str, Price]:
    """The workspace's prices per million tokens, by model name."""
    return {
        p.model: Price(
            input=p.input_per_million,
            output=p.output_per_million,
            cached_input=p.cached_input_per_million,
        )
        for p in ModelPrice.objects.filter(workspace_id=workspace_id)
    }


def _tokens(calls: QuerySet[ModelCall]) -> int:
    sums = calls.aggregate(i=Coalesce(Sum("input_tokens"), 0), o=Coalesce(Sum("output_tokens"), 0))
    return int(sums["i"]) + int(sums["o"])


def round_spent_tokens(review_round: ReviewRound) -> int:
    """Input and output tokens every model call of the round spent (cached input in full)."""
    return _tokens(ModelCall.objects.filter(round=review_round))


def space_spent_tokens(space: ReviewSpace) -> int:
    """The same over every round of the review (the pull request)."""
    return _tokens(ModelCall.objects.filter(round__space=space))


def review_spend(
    space: ReviewSpace, review_round: ReviewRound | None
) -> tuple[Spend | None, Spend]:
    """The shown round's spend and the review's (every round), from one read of its ledger
    and one of the workspace's prices."""
    prices = model_prices(space.workspace_id)
    rows = _round_records(ModelCall.objects.filter(round__space=space))
    of_round = None
    if review_round is not None:
        of_round = spend([r for round_id, r in rows if round_id == review_round.pk], prices)
    return of_round, spend([r for _, r in rows], prices)


def round_spend(review_round: ReviewRound, prices: Mapping[str, Price] | None = None) -> Spend:
    if prices is None:
        prices = model_prices(review_round.space.workspace_id)
    return spend(_call_records(ModelCall.objects.filter(round=review_round)), prices)


def space_spend(space: ReviewSpace, prices: Mapping[str, Price] | None = None) -> Spend:
    if prices is None:
        prices = model_prices(space.workspace_id)
    return spend(_call_records(ModelCall.objects.filter(round__space=space)), prices)


def workspace_spend(
    workspace_id: int, *, since: datetime | None = None, until: datetime | None = None
) -> Spend:
    """A workspace's spend by day, month, role, reviewer and model (since/until: created_at
    bounds)."""
    calls = ModelCall.objects.filter(round__space__workspace_id=workspace_id)
    if since is not None:
        calls = calls.filter(created_at__gte=since)
    if until is not None:
        calls = calls.filter(created_at__lt=until)
    return spend(_call_records(calls), model_prices(workspace_id))
