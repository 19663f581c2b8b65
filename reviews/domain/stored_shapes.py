"""The shapes of the review app's other JSON columns, one per shape. The columns
(reviews/models.py) validate every write against them; see config/typed_json.py for why most of
them read back as plain JSON.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

NodeId = int | str  # publish plans name nodes by primary key; domain views by its string


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- ReviewNode ---------------------------------------------------------------------------------


class TriageFlags(_Record):
    """The triage booleans of an `add_review_node` payload (reviews/domain/nodes.py)."""

    model_config = ConfigDict(extra="forbid", strict=True)  # true/false, not "yes"

    exploitable_externally: bool = False
    hot_path: bool = False
    critical_path: bool = False
    functional_effect: bool = True


ReplacementLines = list[str]  # a one-click suggestion; the column is null when there is none
AgentNames = list[str]  # ReviewNode.credited_agents


# -- ReviewerStream -----------------------------------------------------------------------------

RejectionReasons = list[str]


class CoverageNote(_Record):
    """What an offline analyzer checked: its statement of coverage for its axes."""

    kind: Literal["coverage"]
    files: list[str]
    scope: str = ""


class CommentNote(_Record):
    kind: Literal["comment"]
    body: str
    path: str | None = None
    line: int | None = None


class TicketNote(_Record):
    kind: Literal["ticket"]
    title: str
    body: str


class DiscardedNote(_Record):
    """A place kept for an unfinished attempt's note, so decided tickets keep their index."""

    kind: Literal["discarded"]


StreamNote = Annotated[
    CoverageNote | CommentNote | TicketNote | DiscardedNote, Field(discriminator="kind")
]
StreamNotes = list[StreamNote]


class CoveredArea(_Record):
    area: str
    reviewed_no_issue: bool


class RequirementRow(_Record):
    requirement: str
    covered: Literal["yes", "partial", "no"]
    evidence: str = ""


class StreamClosing(_Record):
    """A model reviewer's closing statement (reviews/domain/closings.py): its summary, the areas
    it says it covered, and for the requirements reviewer the request mapped item by item.
    `structured` is False when the model wrote only prose: kept as the summary, covering
    nothing. `answer_error` says why a closing that did not validate was dropped."""

    summary: str = ""
    covered: list[CoveredArea] = Field(default_factory=list)
    structured: bool = True
    requirements: list[RequirementRow] | None = None  # the requirements reviewer only
    off_target: bool = False
    off_target_reason: str = ""
    answer_error: str = ""


# -- PipelineStep -------------------------------------------------------------------------------


class StepResult(_Record):
    """What a fan-out step's runner returned (reviews/pipeline/stages.py STEP_RUNNERS)."""

    state: Literal["done", "failed", "process_block", "disabled"] | None = None  # a reviewer step
    error: str | None = None
    findings: int | None = None  # an analyzer's accepted findings
    attempt: int | None = None  # the model call attempt that succeeded
    status: str | None = None  # a panel step of one node (before groups): its outcome
    panel: dict[str, str] | None = None  # a panel group step: node id → the panel's outcome
    skipped: str | None = None  # a panel step that did not run, and why


# -- Verdict, PublishRecord -------------------------------------------------------------------

ContributingNodes = list[str]  # the ids of the nodes matching the deciding rule


class PlanEntry(_Record):
    node: NodeId
    reason: str


class PublishPlanSummary(_Record):
    """Which findings a publish posted inline, folded into the body, or left out, and why."""

    inline: list[NodeId] = []
    folded: list[PlanEntry] = []
    skipped: list[PlanEntry] = []


# -- CodeIndexRecord --------------------------------------------------------------------------


class StoredFile(_Record):
    path: str
    language: str
    digest: str
    module: str
    error: str | None = None
    # (qualname, name, kind, start_line, end_line, parent)
    definitions: list[tuple[str, str, str, int, int, str | None]]
    references: list[tuple[str, str, str, int]]  # (source, kind, name, line)
    bindings: list[tuple[str, str, str, str | None]] = []  # (scope, local, target, imported)
    targets: list[str | None] = []  # each reference's resolved target, in order
    reads: list[int] | None = None  # the keys linking the file read, hashed (see index/linker)


class StoredCodeIndex(_Record):
    """A repository's code index at one commit (reviews/index/model.py `CodeIndex.to_json`)."""

    format: int
    indexed: bool
    reason: str | None = None
    skipped: dict[str, str] = {}
    files: list[StoredFile]
