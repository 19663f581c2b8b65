"""What the model calls of a review cost: tokens per role, per reviewer, per day, and money when
a price is set for the model.

Every agent run (a reviewer, a follow-up reviewer, a panel lens, the critic, the lead's
walkthrough, a question asked of a reviewer) leaves one ledger row (`reviews.models.ModelCall`)
with what the provider reported, or, when it reported nothing, our o200k count of what was
sent (`counted_locally`). The functions here add those rows up; they read plain `CallRecord`
values and decide nothing about the database.

Money: a price is per million tokens of each kind. Cached input is part of the input count
(providers report it inside `prompt_tokens`), so the uncached input is `input - cached`, priced
at the input rate, and the cached part at the cached rate (the input rate when no cached rate
is set). A model with no price is counted in tokens only and named in `unpriced`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum


class CallRole(StrEnum):
    """Who made a model call."""

    REVIEWER = "reviewer"
    FOLLOWUP = "followup"
    LENS = "lens"
    CRITIC = "critic"
    LEAD = "lead"
    ASK = "ask"


MILLION = Decimal(1_000_000)
MAX_PRICE = Decimal("100000")  # per million tokens: anything above is a typo
# A model name as providers spell them: letters, digits and . _ - : / @ (no spaces).
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,119}$")
# A price: a plain decimal with at most six places ("2.50", "0.075"), no sign, no exponent.
PRICE = re.compile(r"^\d{1,6}(\.\d{1,6})?$")


@dataclass(frozen=True)
class CallRecord:
    """One agent run's spend, as the ledger stores it."""

    role: CallRole
    name: str  # the reviewer's stream name, the lens, "critic", "lead-walkthrough"
    model: str
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    counted_locally: bool = False
    day: date | None = None


@dataclass(frozen=True)
class Price:
    """Money per million tokens of each kind."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None


@dataclass(frozen=True)
class Totals:
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    calls: int = 0
    counted_locally: int = 0  # calls whose figure is our own count
    cost: Decimal | None = None  # None: no call had a price
    unpriced: tuple[str, ...] = ()  # models called without a price set

    @property
    def tokens(self) -> int:
        """Input and output; cached input is counted in full (it was sent)."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Row:
    """A labelled total: a role, a reviewer, a day or a month."""

    key: str
    totals: Totals


@dataclass(frozen=True)
class Spend:
    total: Totals
    by_role: tuple[Row, ...] = ()
    by_name: tuple[Row, ...] = ()
    by_model: tuple[Row, ...] = ()
    by_day: tuple[Row, ...] = ()
    by_month: tuple[Row, ...] = ()
    unpriced: tuple[str, ...] = field(default=())


def call_cost(record: CallRecord, price: Price) -> Decimal:
    cached = min(max(record.cached_input_tokens, 0), max(record.input_tokens, 0))
    fresh = max(record.input_tokens, 0) - cached
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    money = fresh * price.input + cached * cached_rate + max(record.output_tokens, 0) * price.output
    return money / MILLION


def totals(records: Iterable[CallRecord], prices: Mapping[str, Price] | None = None) -> Totals:
    prices = prices or {}
    items = list(records)
    cost: Decimal | None = None
    unpriced: set[str] = set()
    for r in items:
        price = prices.get(r.model)
        if price is None:
            unpriced.add(r.model)
            continue
        cost = (cost or Decimal(0)) + call_cost(r, price)
    return Totals(
        input_tokens=sum(r.input_tokens for r in items),
        cached_input_tokens=sum(r.cached_input_tokens for r in items),
        output_tokens=sum(r.output_tokens for r in items),
        requests=sum(r.requests for r in items),
        calls=len(items),
        counted_locally=sum(1 for r in items if r.counted_locally),
        cost=cost.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
        if cost is not None
        else None,
        unpriced=tuple(sorted(unpriced)),
    )


def _grouped(
    records: list[CallRecord], key: object, prices: Mapping[str, Price] | None
) -> tuple[Row, ...]:
    groups: dict[str, list[CallRecord]] = {}
    for r in records:
        k = key(r)  # type: ignore[operator]
        if k is None:
            continue
        groups.setdefault(k, []).append(r)
    return tuple(Row(k, totals(v, prices)) for k, v in sorted(groups.items()))


def spend(records: Iterable[CallRecord], prices: Mapping[str, Price] | None = None) -> Spend:
    """Everything a spend view shows, from the ledger's rows and the workspace's prices."""
    items = list(records)
    total = totals(items, prices)
    return Spend(
        total=total,
        by_role=_grouped(items, lambda r: r.role.value, prices),
        by_name=_grouped(items, lambda r: r.name, prices),
        by_model=_grouped(items, lambda r: r.model, prices),
        by_day=_grouped(items, lambda r: r.day.isoformat() if r.day else None, prices),
        by_month=_grouped(items, lambda r: r.day.strftime("%Y-%m") if r.day else None, prices),
        unpriced=total.unpriced,
    )


def parse_price(text: str) -> Decimal | None:
    """A price per million tokens from a form, or None when it is not a plain non-negative
    decimal within range ("" is None too: say so in the form)."""
    text = text.strip()
    if not PRICE.match(text):
        return None
    value = Decimal(text)
    return value if value <= MAX_PRICE else None


def valid_model_name(name: str) -> bool:
    return bool(MODEL_NAME.match(name))


def money(value: Decimal | None) -> str:
    """A cost for a person: "$0.0123", or "" when there is none."""
    if value is None:
        return ""
    places = Decimal("0.01") if value >= 1 else Decimal("0.0001")
    return f"${value.quantize(places, rounding=ROUND_HALF_UP)}"
