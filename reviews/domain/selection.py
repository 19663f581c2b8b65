"""Adaptive reviewer selection.

| change                        | reviewers                                               |
|-------------------------------|---------------------------------------------------------|
| docs-only / formatting / empty| none (approved)                                         |
| trivial, not high-risk        | quality with the requirements check in its brief        |
| trivial, high-risk            | requirements + quality + security                       |
| normal                        | requirements + quality + 1 domain (+ security if risky) |
| large                         | requirements + quality + 2 domain (+ security if risky) |

A "code" reviewer is our quality reviewer. Domain reviewers come from what the change touches, in
this precedence: performance (data access, hot paths), architecture (new or moved modules,
changed public interfaces), then implementation; when signals run out, slots are filled with
implementation, then architecture, then performance. The cap — 3 technical reviewers, 4 with
security, requirements outside it — follows from the table and is asserted.
"""

from __future__ import annotations

from dataclasses import dataclass

from .classification import ChangeClassification, SizeClass
from .types import Dimension, ReviewerSpec

MAX_TECHNICAL = 3
MAX_TECHNICAL_WITH_SECURITY = 4

_DOMAIN_FILL = (Dimension.IMPLEMENTATION, Dimension.ARCHITECTURE, Dimension.PERFORMANCE)


@dataclass(frozen=True, slots=True)
class Selection:
    reviewers: tuple[ReviewerSpec, ...]
    rationale: tuple[str, ...]

    @property
    def dimensions(self) -> frozenset[Dimension]:
        return frozenset(r.dimension for r in self.reviewers)


def domain_candidates(change: ChangeClassification) -> list[tuple[Dimension, str]]:
    """Domain reviewers the change calls for, most pressing first, each with its reason."""
    wanted: list[tuple[Dimension, str]] = []
    if change.touches_data_access or change.touches_hot_path:
        what = "data access" if change.touches_data_access else "a hot path"
        wanted.append((Dimension.PERFORMANCE, f"performance: the change touches {what}"))
    if change.adds_or_moves_modules or change.changes_public_interface:
        what = "new or moved modules" if change.adds_or_moves_modules else "a public interface"
        wanted.append((Dimension.ARCHITECTURE, f"architecture: the change has {what}"))
    for dimension in _DOMAIN_FILL:
        if dimension not in {d for d, _ in wanted}:
            wanted.append((dimension, f"{dimension}: default domain reviewer"))
    return wanted


def select_reviewers(change: ChangeClassification) -> Selection:
    if change.fast_exit is not None:
        return Selection((), (f"{change.fast_exit} change: approved with no reviewer",))

    risky = change.high_risk
    risk_note = ""
    if risky:
        patterns = ", ".join(sorted(change.risk_patterns))
        risk_note = f"security: high-risk patterns ({patterns})"

    if change.size is SizeClass.TRIVIAL:
        if not risky:
            combined = ReviewerSpec(Dimension.QUALITY, with_requirements_check=True)
            return Selection(
                (combined,), ("trivial change: one combined quality + requirements reviewer",)
            )
        trio = (
            ReviewerSpec(Dimension.REQUIREMENTS),
            ReviewerSpec(Dimension.QUALITY),
            ReviewerSpec(Dimension.SECURITY),
        )
        return Selection(trio, ("trivial but high-risk change", risk_note))

    slots = 1 if change.size is SizeClass.NORMAL else 2
    domains = domain_candidates(change)[:slots]
    reviewers = [ReviewerSpec(Dimension.REQUIREMENTS), ReviewerSpec(Dimension.QUALITY)]
    reviewers += [ReviewerSpec(dimension) for dimension, _ in domains]
    rationale = [f"{change.size} change ({change.file_count} files)"]
    rationale += [reason for _, reason in domains]
    if risky:
        reviewers.append(ReviewerSpec(Dimension.SECURITY))
        rationale.append(risk_note)

    technical = [r for r in reviewers if r.dimension is not Dimension.REQUIREMENTS]
    cap = MAX_TECHNICAL_WITH_SECURITY if risky else MAX_TECHNICAL
    assert len(technical) <= cap, "reviewer cap exceeded"
    return Selection(tuple(reviewers), tuple(rationale))
