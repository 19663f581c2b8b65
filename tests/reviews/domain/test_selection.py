"""Adaptive reviewer selection: every branch of the review-manager rules."""

from __future__ import annotations

import pytest

from reviews.domain.classification import (
    ChangeClassification,
    FastExit,
    RiskMatch,
    RiskPattern,
    SizeClass,
)
from reviews.domain.selection import select_reviewers
from reviews.domain.types import Dimension

RISK = (RiskMatch(RiskPattern.AUTH, "app/auth.py", 3, "session"),)
FILES = {SizeClass.TRIVIAL: 1, SizeClass.NORMAL: 5, SizeClass.LARGE: 14}


def _change(
    size: SizeClass = SizeClass.NORMAL,
    *,
    fast_exit: FastExit | None = None,
    risky: bool = False,
    data: bool = False,
    hot: bool = False,
    new_modules: bool = False,
    interface: bool = False,
) -> ChangeClassification:
    return ChangeClassification(
        fast_exit=fast_exit,
        size=size,
        file_count=FILES[size],
        changed_lines=10,
        risks=RISK if risky else (),
        touches_data_access=data,
        touches_hot_path=hot,
        adds_or_moves_modules=new_modules,
        changes_public_interface=interface,
    )


R, Q, IMP, A, S, P = (
    Dimension.REQUIREMENTS,
    Dimension.QUALITY,
    Dimension.IMPLEMENTATION,
    Dimension.ARCHITECTURE,
    Dimension.SECURITY,
    Dimension.PERFORMANCE,
)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_change(SizeClass.TRIVIAL, fast_exit=FastExit.DOCS_ONLY), []),
        (_change(SizeClass.NORMAL, fast_exit=FastExit.FORMATTING_ONLY), []),
        (_change(SizeClass.TRIVIAL), [Q]),
        (_change(SizeClass.TRIVIAL, risky=True), [R, Q, S]),
        (_change(SizeClass.TRIVIAL, risky=True, data=True, new_modules=True), [R, Q, S]),
        (_change(SizeClass.NORMAL), [R, Q, IMP]),
        (_change(SizeClass.NORMAL, data=True), [R, Q, P]),
        (_change(SizeClass.NORMAL, hot=True), [R, Q, P]),
        (_change(SizeClass.NORMAL, new_modules=True), [R, Q, A]),
        (_change(SizeClass.NORMAL, interface=True), [R, Q, A]),
        (_change(SizeClass.NORMAL, data=True, interface=True), [R, Q, P]),
        (_change(SizeClass.NORMAL, risky=True), [R, Q, IMP, S]),
        (_change(SizeClass.LARGE), [R, Q, IMP, A]),
        (_change(SizeClass.LARGE, data=True), [R, Q, P, IMP]),
        (_change(SizeClass.LARGE, interface=True), [R, Q, A, IMP]),
        (_change(SizeClass.LARGE, hot=True, new_modules=True), [R, Q, P, A]),
        (_change(SizeClass.LARGE, risky=True, hot=True, new_modules=True), [R, Q, P, A, S]),
    ],
)
def test_it_selects_the_reviewers_of_each_branch(
    change: ChangeClassification, expected: list[Dimension]
) -> None:
    """The reviewer set for each branch of the selection table, in launch order."""
    assert [r.dimension for r in select_reviewers(change).reviewers] == expected


def test_it_adds_the_requirements_check_to_the_single_trivial_reviewer() -> None:
    """The trivial combined reviewer is quality with the requirements check in its brief."""
    (only,) = select_reviewers(_change(SizeClass.TRIVIAL)).reviewers
    assert only.with_requirements_check
    assert "requirements" in only.label


def test_it_keeps_the_cap_and_explains_itself() -> None:
    """At most 3 technical reviewers, 4 with security; requirements sits outside the cap."""
    selection = select_reviewers(_change(SizeClass.LARGE, risky=True, data=True, interface=True))
    technical = [r for r in selection.reviewers if r.dimension is not R]
    assert len(technical) == 4 and S in selection.dimensions
    assert any("auth/sessions/tokens" in line for line in selection.rationale)
    assert any(
        "performance: the change touches data access" in line for line in selection.rationale
    )
    fast = select_reviewers(_change(fast_exit=FastExit.DOCS_ONLY))
    assert fast.rationale == ("docs-only change: approved with no reviewer",)
