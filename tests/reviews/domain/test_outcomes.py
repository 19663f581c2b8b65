"""Process blocks, reviewer failures and the fix loop."""

from __future__ import annotations

import pytest

from reviews.domain.outcomes import (
    BlockKind,
    FailurePlan,
    after_failure,
    block_kind,
    counts_toward_verdict,
    needs_human,
    rounds_without_approval,
    uncovered_angle,
)
from reviews.domain.types import Dimension, ReviewerSpec
from reviews.domain.types import VerdictLevel as V


@pytest.mark.parametrize(
    ("from_requirements", "request_text", "expected"),
    [
        (True, None, BlockKind.PROCESS),
        (True, "   ", BlockKind.PROCESS),
        (True, "Add rate limiting", BlockKind.CODE),
        (False, None, BlockKind.CODE),
    ],
)
def test_it_tells_a_process_block_from_a_code_block(
    from_requirements: bool, request_text: str | None, expected: BlockKind
) -> None:
    """Requirements with no original request is a process block, which never blocks code."""
    kind = block_kind(from_requirements_check=from_requirements, original_request=request_text)
    assert kind is expected
    assert counts_toward_verdict(kind) is (expected is BlockKind.CODE)


def test_it_retries_a_failed_reviewer_once_then_skips_it() -> None:
    """First failure → retry with a reworded brief; second → continue without it."""
    assert after_failure(failed_attempts=1) is FailurePlan.RETRY_REWORDED
    assert after_failure(failed_attempts=2) is FailurePlan.SKIP
    with pytest.raises(ValueError):
        after_failure(failed_attempts=0)
    line = uncovered_angle(ReviewerSpec(Dimension.SECURITY), "timeout\nafter 600s")
    assert (
        line
        == "The security angle was not covered: the reviewer failed twice (timeout after 600s)."
    )


@pytest.mark.parametrize(
    ("history", "count", "flag"),
    [
        ([], 0, False),
        ([V.HOLD], 1, False),
        ([V.HOLD, V.BLOCK], 2, True),
        ([V.HOLD, V.HOLD, V.SHIP], 0, False),
        ([V.HOLD, V.SHIP, V.HOLD], 1, False),
        ([V.SHIP, V.BLOCK, V.HOLD, V.HOLD], 3, True),
    ],
)
def test_it_flags_the_space_after_two_rounds_without_approval(
    history: list[V], count: int, flag: bool
) -> None:
    """Consecutive non-Ship rounds are counted from the latest; two or more → a human."""
    assert rounds_without_approval(history) == count
    assert needs_human(history) is flag
