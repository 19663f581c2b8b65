"""Reads for the guided review: everything a page needs in a constant number of queries.

The reads live in modules by what they read (node_views, spaces, review_page, notes, threads,
spend, precision, changed_files); this package re-exports the names its importers use, so
`from reviews.selectors import X` stays the public face of the reads.
"""

from reviews.selectors.node_views import node_view
from reviews.selectors.notes import ReviewerComment, ReviewerNotes, TicketView, reviewer_notes
from reviews.selectors.precision import precision_drops, reviewer_calibrations, reviewer_precision
from reviews.selectors.review_page import (
    EAGER_COHORT_PREVIEWS,
    DeltaView,
    FindingGroup,
    ReviewPage,
    RoundSummary,
    preview_lines,
    review_page,
    review_page_bounded,
)
from reviews.selectors.spaces import (
    NO_ROUND,
    disagreement_round,
    round_newest,
    space_get_for_user,
    spaces_for_list,
)
from reviews.selectors.spend import (
    model_prices,
    review_spend,
    round_spend,
    round_spent_tokens,
    space_spend,
    space_spent_tokens,
    workspace_spend,
)
from reviews.selectors.threads import (
    THREAD_SECTIONS,
    page_threads,
    personal_marks,
    thread_rows,
)

__all__ = [
    "EAGER_COHORT_PREVIEWS",
    "NO_ROUND",
    "THREAD_SECTIONS",
    "DeltaView",
    "FindingGroup",
    "ReviewPage",
    "ReviewerComment",
    "ReviewerNotes",
    "RoundSummary",
    "TicketView",
    "disagreement_round",
    "model_prices",
    "node_view",
    "page_threads",
    "personal_marks",
    "precision_drops",
    "preview_lines",
    "review_page",
    "review_page_bounded",
    "review_spend",
    "reviewer_calibrations",
    "reviewer_notes",
    "reviewer_precision",
    "round_newest",
    "round_spend",
    "round_spent_tokens",
    "space_get_for_user",
    "space_spend",
    "space_spent_tokens",
    "spaces_for_list",
    "thread_rows",
    "workspace_spend",
]
