"""How much of the original request a model reads (reviews/domain/request_excerpt.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.request_excerpt import (
    CHECK_CHARS,
    SHARED_CHARS,
    excerpt,
    model_note,
    page_note,
)

requests = st.text(alphabet=st.characters(codec="utf-8") | st.just("\n"), max_size=3_000)


@given(requests, st.integers(min_value=10, max_value=2_000))
def test_an_excerpt_is_the_requests_opening_within_the_limit(request, limit):
    part = excerpt(request, limit)
    assert len(part.text) <= limit
    assert request.strip().startswith(part.text)
    assert part.total == len(request.strip())
    assert part.cut == (len(request.strip()) > limit)
    # A cut keeps at least four fifths of the limit, minus the blanks it strips.
    if part.cut:
        assert len(part.text) >= len(request.strip()[: limit * 4 // 5].rstrip())
        assert f"{part.total:,}" in model_note(part, read_by="x")
    else:
        assert model_note(part, read_by="x") == ""


def test_a_cut_ends_on_a_line_break_near_the_limit():
    request = "\n".join(f"Requirement {i}: the export lists every product." for i in range(100))
    part = excerpt(request, 500)
    assert part.cut and part.text.endswith("product.") and "\n" in part.text
    assert len(part.text) > 400


def test_the_page_says_what_was_read_only_when_something_was_cut():
    assert page_note("Add a search.") == ""
    middle = "x" * (SHARED_CHARS * 2)
    assert page_note(middle) == (
        f"The original request is {SHARED_CHARS * 2:,} characters long: every reviewer read its "
        f"first {SHARED_CHARS:,}, and the requirements check all of it."
    )
    long = "y" * (CHECK_CHARS + 10)
    assert page_note(long).endswith(f"its first {CHECK_CHARS:,}; the rest was not sent to a model.")
