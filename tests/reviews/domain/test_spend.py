"""Adding up the ledger: totals, groups and money."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.report_figures import tokens_line
from reviews.domain.spend import (
    CallRecord,
    CallRole,
    Price,
    call_cost,
    money,
    parse_price,
    spend,
    totals,
    valid_model_name,
)


@st.composite
def records(draw) -> CallRecord:
    tokens_in = draw(st.integers(0, 2_000_000))
    return CallRecord(
        role=draw(st.sampled_from(list(CallRole))),
        name=draw(st.sampled_from(["implementation", "security", "lens-severity", "critic"])),
        model=draw(st.sampled_from(["a", "b"])),
        input_tokens=tokens_in,
        cached_input_tokens=draw(st.integers(0, tokens_in)),
        output_tokens=draw(st.integers(0, 100_000)),
        requests=draw(st.integers(0, 40)),
        counted_locally=draw(st.booleans()),
        day=draw(st.dates(min_value=date(2026, 1, 1), max_value=date(2026, 12, 31))),
    )


PRICES = {"a": Price(input=Decimal("2.5"), output=Decimal("10"), cached_input=Decimal("1.25"))}


@given(st.lists(records(), max_size=30))
def test_every_grouping_adds_up_to_the_total(items):
    result = spend(items, PRICES)
    for rows in (result.by_role, result.by_name, result.by_model, result.by_day, result.by_month):
        assert sum(r.totals.input_tokens for r in rows) == result.total.input_tokens
        assert sum(r.totals.output_tokens for r in rows) == result.total.output_tokens
        assert sum(r.totals.calls for r in rows) == result.total.calls == len(items)
    assert result.total.tokens == sum(r.input_tokens + r.output_tokens for r in items)


@given(st.lists(records(), max_size=30))
def test_money_only_for_priced_models_and_the_others_named(items):
    result = totals(items, PRICES)
    assert ("b" in result.unpriced) == any(r.model == "b" for r in items)
    priced = [r for r in items if r.model == "a"]
    if not priced:
        assert result.cost is None
    else:
        exact = sum((call_cost(r, PRICES["a"]) for r in priced), Decimal(0))
        assert abs(result.cost - exact) <= Decimal("0.0000005")
        assert result.cost >= 0


def test_cached_input_is_priced_at_its_rate_and_falls_back_to_the_input_rate():
    record = CallRecord(
        CallRole.REVIEWER, "security", "a", input_tokens=1_000_000, cached_input_tokens=400_000
    )
    assert call_cost(record, PRICES["a"]) == Decimal("2.0")  # 0.6 * 2.5 + 0.4 * 1.25
    no_cached_rate = Price(input=Decimal("2.5"), output=Decimal("10"))
    assert call_cost(record, no_cached_rate) == Decimal("2.5")


def test_a_price_is_a_plain_non_negative_decimal():
    assert parse_price("2.50") == Decimal("2.50") and parse_price(" 0 ") == Decimal(0)
    for bad in ("-1", "1e3", "1,5", "", "abc", "1.1234567", "NaN", "Infinity", "100001"):
        assert parse_price(bad) is None, bad
    assert valid_model_name("gpt-4o-mini") and valid_model_name("anthropic/claude-3.5:beta")
    assert not valid_model_name("two words") and not valid_model_name("")


def test_the_report_line_says_tokens_and_money():
    item = CallRecord(
        CallRole.LENS,
        "lens-severity",
        "a",
        input_tokens=12_345,
        cached_input_tokens=1_024,
        output_tokens=678,
        requests=2,
    )
    assert tokens_line(totals([item], PRICES)) == (
        "12,345 input tokens (1,024 cached), 678 output tokens in 1 call; $0.0364"
    )
    assert tokens_line(totals([item])) == (
        "12,345 input tokens (1,024 cached), 678 output tokens in 1 call"
    )
    assert money(Decimal("12.345")) == "$12.35" and money(None) == ""
