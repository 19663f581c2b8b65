"""The lead's walkthrough: what the lead is told, and what of its answer is kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.model_answers import Walkthrough, WalkthroughStep
from reviews.domain.round_stats import ChangedFileSummary, CohortSummary
from reviews.domain.walkthrough import (
    MAX_EXPLANATION,
    MAX_STEPS,
    MAX_TITLE,
    tour_steps,
    walkthrough_brief,
)

CHANGED = ["shop/search.py", "shop/views.py"]


def _cohort(label: str, paths: list[str]) -> CohortSummary:
    return CohortSummary(
        key="k" * 12,
        label=label,
        paths=paths,
        symbols=[],
        context=[],
        edges=[],
        blast_radius=None,
        reading_order=[],
        diagram="",
        previews=[],
    )


def test_the_brief_names_the_files_and_cohorts_only() -> None:
    brief = walkthrough_brief(
        cohorts=[_cohort("search and its view", CHANGED)],
        files=[
            ChangedFileSummary(path=p, change="added", additions=3, deletions=0, key=p)
            for p in CHANGED
        ],
        classification=None,
    )
    assert "- shop/search.py (added, +3 −0)" in brief
    assert "1. search and its view: shop/search.py, shop/views.py" in brief


def test_paths_outside_the_change_are_dropped_and_secrets_redacted() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    answer = Walkthrough(
        steps=[
            WalkthroughStep(
                title="Search",
                paths=["shop/search.py", "/etc/passwd", "shop/search.py", "shop/views.py"],
                explanation=f"Builds the query; the token {secret} is read here.",
            )
        ]
    )
    [step] = tour_steps(answer, CHANGED)
    assert step.paths == ["shop/search.py", "shop/views.py"]
    assert secret not in step.explanation and "[REDACTED" in step.explanation


step_text = st.text(min_size=1, max_size=900).filter(str.strip)


@given(
    st.lists(
        st.tuples(step_text, st.lists(st.sampled_from([*CHANGED, "x.py", "../y"])), step_text),
        max_size=20,
    )
)
def test_a_kept_walkthrough_stays_inside_the_change(raw) -> None:
    answer = Walkthrough(
        steps=[WalkthroughStep(title=t, paths=p, explanation=e) for t, p, e in raw]
    )
    steps = tour_steps(answer, CHANGED)
    assert len(steps) == min(len(raw), MAX_STEPS)
    for step in steps:
        assert set(step.paths) <= set(CHANGED) and len(step.paths) == len(set(step.paths))
        assert len(step.title) <= MAX_TITLE and len(step.explanation) <= MAX_EXPLANATION
