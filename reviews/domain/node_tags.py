"""What a finding carries besides its payload (`ReviewNode.tags`), and who writes each part:

- `cross_notes`: the reviewer's observations for other dimensions (recorded with the node).
- `analyzer`: what an offline analyzer knows of its finding (recorded with the node).
- `requirement_gap`: the requirements reviewer's category for its finding (missing feature,
  misinterpretation, partial implementation, scope creep; recorded with the node).
- `co_located`, `cross_referenced`, `conflicting`, `defect_classes`: the lead pass
  (reviews/services/consolidation.py), rewritten on every pass.
- `unverified`: panel planning, for a finding the panel will not look at; the panel, for one
  no lens gave a valid verdict on.
- `panel`, `panel_note`, `panel_lenses`: the verification panel's outcome, and the lenses it
  put the finding to (an analyzer's finding may skip lens 1: reviews/domain/panel.py).
- `decided`: a person who decided a disagreement about the finding.
- `folded_into`: the finding this one was folded into when a person decided a disagreement
  for the other side (reviews/services/disagreements.py `disagreement_decide`); the lead pass
  keeps it a duplicate there.
- `memory`: the earlier dismissal the lead pass recorded the finding under (dismissal memory,
  reviews/services/memory.py): carried from an earlier round of the review, or a pattern the
  workspace dismissed. Kept after a person reopens the finding, so it is not folded again.

A key nobody wrote is absent from the stored JSON (and None here).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reviews.domain.dismissal_memory import MemoryKind
from reviews.domain.panel import PanelStatus
from reviews.domain.types import Dimension, RequirementGap


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CrossNoteTag(_Record):
    dimension: Dimension
    note: str = Field(min_length=1)


class AnalyzerEvidence(_Record):
    """An offline analyzer's facts about its finding; the finaliser and precision read them."""

    tool: str
    rule: str
    high_precision: bool
    test_code: bool = False
    lines: list[int] | None = None  # the lines a grouped finding covers
    defused: str | None = None  # why bandit's match is harmless here, when it is


class Decision(_Record):
    by: int  # the user who decided
    side: list[str]  # the reviewers whose view was kept
    reason: str


class MemoryTag(_Record):
    """The earlier decision a finding was recorded dismissed under
    (reviews/domain/dismissal_memory.py)."""

    kind: MemoryKind
    nodes: list[int]  # the dismissed findings it rests on
    round: int | None = None  # carried: the round whose decision it carries
    decided_at: datetime  # the decision credited: the fold shows while the finding holds it


class NodeTags(_Record):
    cross_notes: list[CrossNoteTag] | None = None
    analyzer: AnalyzerEvidence | None = None
    co_located: list[int] | None = None
    cross_referenced: list[int] | None = None
    conflicting: list[int] | None = None
    defect_classes: list[str] | None = None
    unverified: bool | None = None
    panel: PanelStatus | None = None
    panel_note: str | None = None
    panel_lenses: list[str] | None = None
    decided: Decision | None = None
    folded_into: int | None = None
    requirement_gap: RequirementGap | None = None
    memory: MemoryTag | None = None

    def with_(self, **values: Any) -> NodeTags:
        """A copy with these keys written (validated: a wrong shape raises here)."""
        return NodeTags.model_validate({**self.model_dump(exclude_unset=True), **values})

    def without(self, *keys: str) -> NodeTags:
        return NodeTags.model_validate(
            {k: v for k, v in self.model_dump(exclude_unset=True).items() if k not in keys}
        )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True)

    @property
    def contested(self) -> bool:
        """The panel's lenses disagreed about the finding."""
        return self.panel is PanelStatus.CONTESTED
