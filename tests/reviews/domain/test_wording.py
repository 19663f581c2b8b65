"""Stored facts in words: axis details as rows, cohort names, times, sources, flashes."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from guardrails.rules import decision_flash
from reviews.domain.axes import clearing_steps, deterministic_axes, token_axes_detailed
from reviews.domain.round_stats import CohortSummary
from reviews.domain.types import AxisName, AxisResult, Dimension
from reviews.domain.wording import (
    AXIS_SOURCES,
    axis_detail_rows,
    axis_label,
    axis_source_words,
    cohort_name,
    cohort_names,
    disagreement_flash,
    in_words,
    rejected_words,
    selection_words,
    short_symbol,
    time_ago,
    time_until,
)
from reviews.index.axes_compute import compute_api_contract, compute_test_gap, compute_visual
from reviews.index.cohorts import compute_cohorts
from reviews.sources.diffs import parse_unified_diff

HASH = re.compile(r"[0-9a-f]{40,64}")
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def cohort(key="a" * 64, paths=(), symbols=(), order=()):
    return CohortSummary.model_validate(
        {
            "key": key,
            "label": "code graph",
            "paths": list(paths),
            "symbols": list(symbols),
            "context": [],
            "edges": [],
            "blast_radius": None,
            "reading_order": [{"path": p, "symbols": list(s), "is_test": t} for p, s, t in order],
            "diagram": "",
            "previews": [],
        }
    )


def text_of(rows) -> str:
    return " | ".join(f"{r.label}: {r.value} [{', '.join(i.text for i in r.items)}]" for r in rows)


# -- cohort names --------------------------------------------------------------------------------


def test_a_cohort_is_named_by_its_main_symbol_and_file():
    c = cohort(
        paths=["shop/cart.py", "shop/tests/test_cart.py"],
        symbols=["shop.cart.Cart", "shop.cart.Cart.total", "shop.tests.test_cart.test_total"],
        order=[
            ("shop/tests/test_cart.py", ["shop.tests.test_cart.test_total"], True),
            ("shop/cart.py", ["shop.cart.Cart", "shop.cart.Cart.total"], False),
        ],
    )
    assert cohort_name(c) == "Cart in shop/cart.py, with 2 more symbols in 2 files"


def test_a_single_symbol_cohort_and_a_typescript_one():
    one = cohort(
        paths=["src/pkg/mod.py"],
        symbols=["pkg.mod.run"],
        order=[("src/pkg/mod.py", ["pkg.mod.run"], False)],
    )
    assert cohort_name(one) == "run in src/pkg/mod.py"
    ts = cohort(
        paths=["web/app.ts", "web/util.ts"],
        symbols=["web/app.ts:render"],
        order=[("web/app.ts", ["web/app.ts:render"], False)],
    )
    assert cohort_name(ts) == "render in web/app.ts, and 1 more file"


def test_a_module_level_change_is_named_by_its_file():
    c = cohort(
        paths=["pkg/settings.py"],
        symbols=["pkg.settings"],
        order=[("pkg/settings.py", ["pkg.settings"], False)],
    )
    assert cohort_name(c) == "pkg/settings.py"
    assert short_symbol("pkg.settings", "pkg/settings.py") == "settings.py"


def test_path_grouped_cohorts_are_named_by_their_files():
    assert cohort_name(cohort(paths=["docs/a.md"])) == "docs/a.md"
    assert cohort_name(cohort(paths=["docs/a.md", "docs/b.md"])) == "2 files in docs/"
    assert cohort_name(cohort(paths=["README.md", "LICENSE"])) == "2 files in the top directory"
    assert cohort_name(cohort(paths=[])) == "an empty group"


def test_the_index_cohorts_get_names_without_hashes():
    diff = (
        "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n"
        "@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
    )
    cohorts = compute_cohorts(parse_unified_diff(diff), None)
    (name,) = cohort_names(cohorts).values()
    assert name == "pkg/a.py" and not HASH.search(name)


# -- axis rows -----------------------------------------------------------------------------------


def test_test_gap_names_cohorts_and_links_their_cards():
    c = cohort(
        key="b" * 64,
        paths=["shop/cart.py"],
        symbols=["shop.cart.total"],
        order=[("shop/cart.py", ["shop.cart.total"], False)],
    )
    _, details = compute_test_gap([cast(Any, c)])  # it reads keys and paths only
    rows = axis_detail_rows(AxisName.TEST_GAP, details, names=cohort_names([c]))
    gap = next(r for r in rows if r.label == "Cohorts with no test")
    assert gap.value == "1 cohort"
    assert [(i.text, i.anchor) for i in gap.items] == [
        ("total in shop/cart.py", "cohort-bbbbbbbbbbbb")
    ]
    text = text_of(rows)
    assert not HASH.search(text) and "{" not in text
    assert "1 cohort that changes non-test code" in text
    assert "Caveat" in text and "advisory" in text


def test_a_cohort_key_with_no_name_is_still_not_shown_whole():
    rows = axis_detail_rows(AxisName.TEST_GAP, {"cohorts_without_tests": ["c" * 64]}, names={})
    assert not HASH.search(text_of(rows))


def test_token_axes_say_which_reviewers_and_tools_ran():
    from reviews.domain.axes import AnalyzerRun

    axes = token_axes_detailed(
        coverage={Dimension.SECURITY: "checked auth"},
        nodes=[],
        analyzers=[AnalyzerRun("bandit", frozenset({AxisName.SECURITY}), ("a.py", "b.py"), "B1")],
    )
    _, details = axes[AxisName.SECURITY]
    rows = axis_detail_rows(AxisName.SECURITY, details)
    assert ("Model reviewers that ran", "security") in [(r.label, r.value) for r in rows]
    bandit = next(r for r in rows if r.label == "Tool: bandit")
    assert bandit.value == "checked 2 changed files (B1); 0 findings on this axis"
    assert [i.text for i in bandit.items] == ["a.py", "b.py"]
    _, nothing = token_axes_detailed(coverage={}, nodes=[])[AxisName.CORRECTNESS]
    rows = axis_detail_rows(AxisName.CORRECTNESS, nothing)
    assert rows[0].label == "Why" and "no reviewer or analyzer" in rows[0].value


def test_api_contract_says_what_was_compared_what_changed_and_with_which_tool():
    base = {"pkg/__init__.py": "def run(a): ...\n", "pkg/b.py": "X = 1\n"}
    head = {"pkg/__init__.py": "def run(a, b): ...\n", "pkg/b.py": "X = 1\n"}
    result, details = compute_api_contract(base_files=base, head_files=head)
    assert result is AxisResult.FAIL
    rows = {r.label: r for r in axis_detail_rows(AxisName.API_CONTRACT, details)}
    assert rows["What was compared"].items[0].text == "Python package pkg"
    assert rows["Tool"].value == "griffe"
    assert rows["What changed"].value.startswith("1 breaking")
    assert rows["What changed"].items[0].text.startswith("breaks callers: ")
    assert "To clear the gate" in rows
    assert "{" not in text_of(rows.values())


def test_unavailable_and_submitted_axes_read_as_words():
    (visual, *_) = [d for a, _, d in deterministic_axes(submitted=set(), fast_exit=False)]
    rows = axis_detail_rows(AxisName.VISUAL, visual)
    assert rows[0] == rows[0].__class__("Why", "no visual result was submitted for this round")
    clear = next(r for r in rows if r.label == "To clear the gate")
    assert next(i.text for i in clear.items).startswith("submit visual from CI (POST /api/v1/")
    _, submitted = compute_visual(AxisResult.PASS)
    assert axis_detail_rows(AxisName.VISUAL, submitted) == []
    ci = axis_detail_rows(AxisName.PERFORMANCE, {"p95_ms": 120, "runner": {"os": "linux"}})
    assert [(r.label, r.value) for r in ci] == [("P95 ms", "120"), ("Runner", "os: linux")]
    assert clearing_steps(AxisName.VISUAL, AxisResult.PASS) == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    axis=st.sampled_from([a.value for a in AxisName] + ["custom"]),
    details=st.dictionaries(st.text(max_size=12), JSON, max_size=6),
)
def test_any_stored_details_become_rows_of_words(axis, details):
    """Whatever a CI system submitted: no exception, and no Python dict or list dump."""
    rows = axis_detail_rows(axis, details)
    for row in rows:
        assert isinstance(row.label, str) and isinstance(row.value, str)
        assert not row.value.startswith(("{'", "['"))


# -- other words ---------------------------------------------------------------------------------


def test_every_axis_source_written_by_the_pipeline_has_words():
    for source in ("tokens", "cohorts", "deterministic", "submitted"):
        assert source in AXIS_SOURCES and axis_source_words(source).split()[0] != source
    assert axis_source_words("tokens").startswith("from the reviewers")
    assert axis_source_words("some_ci") == "Some ci"


def test_identifiers_read_as_words():
    assert in_words("awaiting_approval") == "Awaiting approval"
    assert in_words("testGap") == "Test gap"
    assert axis_label("apiContract") == "API contract" and axis_label("testGap") == "Test gap"
    assert selection_words("all_open") == "every open finding"


def test_times_never_say_zero_minutes():
    assert time_ago(NOW - timedelta(seconds=5), NOW) == "just now"
    assert time_ago(NOW + timedelta(seconds=5), NOW) == "just now"  # clock skew
    assert time_ago(NOW - timedelta(minutes=1), NOW) == "1 minute ago"
    assert time_ago(NOW - timedelta(minutes=3, seconds=50), NOW) == "3 minutes ago"
    assert time_ago(NOW - timedelta(hours=26), NOW) == "1 day ago"
    assert time_until(NOW + timedelta(minutes=57, seconds=3), NOW) == "in 57 minutes"
    assert time_until(NOW + timedelta(seconds=20), NOW) == "in under a minute"
    assert time_until(NOW - timedelta(seconds=1), NOW) == "now"


@given(st.integers(min_value=0, max_value=10**9))
def test_time_ago_is_words_for_any_span(seconds):
    text = time_ago(NOW - timedelta(seconds=seconds), NOW)
    assert not text.startswith("0 ") and (text == "just now" or text.endswith(" ago"))


def test_decision_flashes_are_english():
    assert (
        decision_flash(
            number=2, done="denied", approving=False, approved=False, approvals=0, required=1
        )
        == "Request #2 denied: nothing it asked for happens."
    )
    assert decision_flash(
        number=3, done="approved", approving=True, approved=True, approvals=1, required=1
    ).startswith("Request #3 approved")
    assert "needs 1 more approval before" in decision_flash(
        number=4, done="approved", approving=True, approved=False, approvals=1, required=2
    )


def test_disagreement_flashes_say_what_happened():
    assert disagreement_flash("dismiss").startswith("Disagreement dismissed")
    assert disagreement_flash("first") == "Disagreement settled: the first reading is kept."


def test_rejected_counts_say_what_was_refused():
    assert rejected_words(0, []) == "none"
    assert rejected_words(1, ["x"]).startswith("1 finding this reviewer reported did not match")
    assert "the first 2 reasons are listed" in rejected_words(5, ["a", "b"])
