"""A reviewer's closing statement: coverage is what its structured answer lists, nothing else."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.closings import (
    MAX_CHARS,
    coverage_statement,
    off_target_reason,
    prose_closing,
    stored_closing,
)
from reviews.domain.model_answers import (
    CoveredArea,
    RequirementRow,
    RequirementsClosing,
    ReviewerClosing,
)


def test_the_covered_areas_are_the_coverage_statement_with_their_flags() -> None:
    answer = ReviewerClosing(
        summary="The query builder is unsafe.",
        covered=[
            CoveredArea(area="shop/search.py", reviewed_no_issue=False),
            CoveredArea(area="shop/views.py", reviewed_no_issue=True),
        ],
    )
    closing = stored_closing(answer)
    assert closing.structured and closing.summary == "The query builder is unsafe."
    assert coverage_statement(closing) == "shop/search.py; shop/views.py (reviewed, no issue)"


def test_prose_covers_nothing_whatever_verbs_it_uses() -> None:
    # The old regex took "examined" as a statement of coverage: prose is never one now.
    closing = stored_closing(prose_closing("I examined and reviewed everything carefully."))
    assert not closing.structured and closing.covered == []
    assert closing.summary == "I examined and reviewed everything carefully."
    assert coverage_statement(closing) == ""


def test_an_answer_that_never_validated_keeps_its_reason_and_covers_nothing() -> None:
    closing = stored_closing(None, answer_error="no valid answer after a retry: covered: missing")
    assert not closing.structured and coverage_statement(closing) == ""
    assert "covered: missing" in closing.answer_error
    assert coverage_statement(None) == ""


def test_the_requirements_table_and_the_off_target_judgement_are_kept() -> None:
    answer = RequirementsClosing(
        summary="Search and deletion are there; the export is not reachable.",
        covered=[CoveredArea(area="shop/search.py", reviewed_no_issue=False)],
        requirements=[
            RequirementRow(
                requirement="Product search", covered="yes", evidence="shop/search.py:10"
            ),
            RequirementRow(requirement="Export", covered="partial", evidence="shop/search.py:16"),
        ],
        off_target=True,
        off_target_reason="It builds a product import, not an export.",
    )
    closing = stored_closing(answer)
    assert [(r.requirement, r.covered) for r in closing.requirements or []] == [
        ("Product search", "yes"),
        ("Export", "partial"),
    ]
    assert off_target_reason(closing) == "It builds a product import, not an export."
    # off_target false: no reason, whatever the model wrote in the reason field.
    assert off_target_reason(stored_closing(answer.model_copy(update={"off_target": False}))) == ""
    assert off_target_reason(None) == ""


def test_secrets_in_a_closing_are_redacted() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    closing = stored_closing(
        ReviewerClosing(
            summary=f"Found {secret}", covered=[CoveredArea(area=secret, reviewed_no_issue=True)]
        )
    )
    assert secret not in closing.model_dump_json()


@given(st.text(max_size=2000))
def test_any_prose_is_kept_cut_and_never_counts_as_coverage(text: str) -> None:
    closing = stored_closing(prose_closing(text))
    assert 0 < len(closing.summary) <= MAX_CHARS
    assert coverage_statement(closing) == "" and not closing.structured
