"""`reviewers_for` with a workspace's settings: the one interpreter of the gates decides who a
round runs, who it leaves out as disabled, and where custom reviewers join."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.pipeline.template import (
    PR_REVIEW_REVIEWERS,
    ConfiguredReviewer,
    disabled_reviewers,
    reviewers_for,
)

TIERS = ("light", "balanced", "thorough", "adaptive")
DIMENSIONS = ("implementation", "quality", "architecture", "requirements")
BUILTIN_KEYS = [r.key for r in PR_REVIEW_REVIEWERS] + ["requirements"]


def _facts(tier, *, selected=(), model=True, python=True):
    facts = {"tier": tier, "fast_exit": False, "model_configured": model, "python_changed": python}
    if tier == "adaptive":
        facts["selected"] = list(selected)
    return facts


configured = st.lists(
    st.one_of(
        st.builds(
            ConfiguredReviewer,
            key=st.sampled_from(BUILTIN_KEYS),
            enabled=st.booleans(),
            builtin=st.just(True),
        ),
        st.builds(
            ConfiguredReviewer,
            key=st.sampled_from(["payments", "a11y", "docs-check"]),
            enabled=st.booleans(),
            builtin=st.just(False),
            dimension=st.sampled_from(DIMENSIONS),
            tiers=st.lists(st.sampled_from(TIERS), unique=True).map(tuple),
            requirements_check=st.booleans(),
        ),
    ),
    unique_by=lambda c: c.key,
)
selections = st.lists(
    st.sampled_from([(d, d) for d in (*DIMENSIONS, "security", "performance")]), unique=True
)


@given(st.sampled_from(TIERS), selections, configured, st.booleans())
def test_run_and_disabled_split_what_the_gates_call_for(tier, selected, settings, model):
    facts = _facts(tier, selected=selected, model=model)
    run = reviewers_for(facts, settings)
    off = disabled_reviewers(facts, settings)
    switched_off = {c.key for c in settings if not c.enabled}
    assert not {r.key for r in run} & switched_off
    assert {r.key for r in off} <= switched_off
    assert len({r.key for r in run}) == len(run)  # one stream per reviewer
    # Without settings, the template alone decides: switching reviewers off only removes.
    plain = {r.key for r in reviewers_for(facts)}
    customs = {c.key for c in settings if not c.builtin}
    assert {r.key for r in run} - customs <= plain
    assert {r.key for r in run} | {r.key for r in off} >= plain
    if not model:  # no model: custom reviewers are model reviewers too
        assert not {r.key for r in run} & customs


@given(st.sampled_from(TIERS), selections, configured)
def test_a_custom_reviewer_runs_exactly_where_its_tiers_and_dimension_say(tier, selected, settings):
    facts = _facts(tier, selected=selected)
    run = {r.key: r for r in reviewers_for(facts, settings)}
    picked = {d for _, d in selected}
    for c in settings:
        if c.builtin:
            continue
        expected = c.enabled and tier in c.tiers and (tier != "adaptive" or c.dimension in picked)
        assert (c.key in run) == expected
        if expected:
            assert run[c.key].dimension == c.dimension
            assert run[c.key].requirements_check == c.requirements_check


def test_the_combined_adaptive_reviewer_keeps_its_requirements_check():
    facts = {
        **_facts("adaptive", selected=[("quality", "quality")]),
        "requirements_check": ["quality"],
    }
    [quality] = [r for r in reviewers_for(facts) if r.key == "quality"]
    assert quality.requirements_check


def test_the_template_view_shows_custom_reviewers_and_those_switched_off():
    from reviews.pipeline.template import describe

    rows = describe(
        [
            ConfiguredReviewer("security", enabled=False),
            ConfiguredReviewer(
                "payments",
                builtin=False,
                dimension="quality",
                tiers=("light",),
                requirements_check=True,
            ),
        ]
    )
    reviewers = {row["reviewer"]: row for row in rows if "reviewer" in row}
    assert reviewers["security"]["enabled"] is False
    assert "enabled" not in reviewers["implementation"]
    assert reviewers["payments"]["runWhen"]["tier"] == ["light"]
    assert reviewers["payments"]["requirementsCheck"] is True


def test_each_tiers_help_names_the_model_reviewers_it_runs():
    from workspaces.rules import TIER_HELP, Tier

    for tier in ("light", "balanced", "thorough"):
        runs = [r.key for r in PR_REVIEW_REVIEWERS if tier in r.run_when.get("tier", ())]
        help_text = TIER_HELP[Tier(tier)].lower()
        assert all(key in help_text for key in runs), (tier, runs, help_text)
        others = {r.key for r in PR_REVIEW_REVIEWERS if "tier" in r.run_when} - set(runs)
        assert not any(f"{key} reviewer" in help_text for key in others), tier
