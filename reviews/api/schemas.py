"""What the reviews API answers, as schemas: the OpenAPI document is the contract.

`ReviewJson` is the review JSON (`quorum.review/v1`) that reviews/reports/json_export.py
builds for the API and for `manage.py review --format json`; tests/test_openapi_contract.py
validates a real finished review against it, so a field json_export.py adds without a schema
here fails there.
Fields are only ever added within v1. Where a value comes from JSON stored by an earlier
version (a round's cohorts), what can be missing has a default.
"""

from __future__ import annotations

from typing import Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from config.api_types import JsonMap, JsonObject, Text
from reviews.domain import types as t
from reviews.domain.round_states import RoundState
from reviews.domain.space_status import SpaceStatus
from reviews.domain.stored_shapes import StreamClosing
from reviews.domain.stream_states import StreamState
from reviews.domain.threads import ProposalKind, ProposalState, Source
from reviews.domain.tickets import TicketStatus

# The review JSON ---------------------------------------------------------------------------


class ReviewFlagOut(Schema):
    flagged_at: str | None
    reason: str


class ReviewPublicationOut(Schema):
    """The shown round's one GitHub review (a failed attempt does not count)."""

    round: int
    state: t.PublishState
    url: str | None
    github_review_id: int | None
    event: str | None
    requested_by: str | None
    approved_by: str | None
    posted_at: str | None


class ReviewSpaceOut(Schema):
    id: int
    status: SpaceStatus
    # Two rounds in a row ended without approval: a person should decide (only a person clears
    # it); `flag` says since when and why, null while not flagged.
    flagged_for_human: bool
    flag: ReviewFlagOut | None
    publication: ReviewPublicationOut | None


class ReviewPullRequestOut(Schema):
    repository: str
    number: int | None  # null for a local pair of refs
    base_ref: str
    head_ref: str
    base_sha: str
    head_sha: str
    title: str


class GoneFindingOut(Schema):
    fingerprint: str
    title: str
    location: str
    priority: t.Priority


class RoundDeltaOut(Schema):
    """The shown round against the last finished round of a different head (`baseline`)."""

    baseline: int | None
    same_head_as: int | None
    summary: str
    new: int | None  # the counts are null without a baseline
    still_open: int | None
    gone: int | None
    gone_findings: list[GoneFindingOut]


class ReviewRoundOut(Schema):
    number: int
    tier: t.Tier
    state: RoundState
    stage: str
    error: str
    state_label: str
    head_sha: str
    rerun_of: int | None
    delta: RoundDeltaOut


class RoundSummaryOut(Schema):
    """One round in the review's round switcher (also GET …/rounds)."""

    number: int
    state: RoundState
    state_label: str
    head_sha: str
    tier: t.Tier
    verdict: t.VerdictLevel | None
    rerun_of: int | None
    superseded_by: int | None
    created_at: str
    finished_at: str | None
    error: str
    delta: str  # the delta's summary in words


class ReviewVerdictOut(Schema):
    level: t.VerdictLevel
    state: t.ReviewState
    # Null when the level rests on missing data (a gated axis nobody computed).
    confidence: float | None
    rule: str


class ReviewAxisOut(Schema):
    axis: t.AxisName
    result: t.AxisResult
    gated: bool
    source: str  # tokens | deterministic | submitted
    details: JsonMap


class CohortBlastRadiusOut(Schema):
    definitions: int
    files: int


class CohortReadingStepOut(Schema):
    path: str
    symbols: list[str]
    is_test: bool


class CohortHunkOut(Schema):
    index: int
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str
    text: str


class CohortPreviewOut(Schema):
    path: str
    hunks: list[CohortHunkOut]


class CohortOut(Schema):
    """A group of changes read together, in reading order (empty until the code index ran)."""

    key: str
    label: str
    paths: list[str]
    symbols: list[str] = []
    context: list[str] = []
    # [source, target, kind]
    edges: list[list[str]] = []
    blast_radius: CohortBlastRadiusOut | None = None
    reading_order: list[CohortReadingStepOut] = []
    diagram: str = ""
    previews: list[CohortPreviewOut] = []
    # "path: specifier" for imports of the repository's own code the index could not resolve
    unresolved_imports: list[str] = []
    # paths other cohorts change too, in parts with no link to this one
    split_paths: list[str] = []


class NodeTriageOut(Schema):
    category: t.Category
    severity: t.Severity
    effort: t.Effort


class NodeAnchorOut(Schema):
    path: str
    start_line: int | None
    end_line: int | None
    side: t.Side


class NodeConfirmationOut(Schema):
    agent: str
    lens: t.ConfirmationLens
    verdict: str


class NodeFixOut(Schema):
    replacement_lines: list[str] | None
    diff: str | None
    fix_prompt: str | None


class ReviewNodeOut(Schema):
    # Against the baseline round: "new", "still open", or null.
    delta: Literal["new", "still open"] | None
    id: int
    stream: str
    reviewers: list[str]
    type: t.NodeType
    priority: t.Priority
    triage: NodeTriageOut
    anchor: NodeAnchorOut | None  # null for a finding about the whole change
    status: t.NodeStatus
    confirmations: list[NodeConfirmationOut]
    fingerprint: str
    duplicate_of: int | None
    # The rows merged into this finding (a canonical's; empty for a merged row).
    duplicates: list[int] = []
    confidence: float
    title: str
    body: str
    fix: NodeFixOut
    # co_located / cross_referenced / conflicting node ids, contested / unverified marks.
    tags: JsonMap


class DisagreementOut(Schema):
    path: str
    first: int
    second: int
    reasons: list[str]
    key: int  # what a decision names
    first_reviewers: list[str]
    second_reviewers: list[str]


class ReviewStreamOut(Schema):
    name: str
    agent: str
    kind: t.StreamKind
    state: StreamState
    accepted: int
    rejected: int
    tokens_in: int
    tokens_out: int
    attempts: int
    refused_calls: int
    redactions: int
    error: str
    coverage_note: str  # the closing's summary
    # The closing statement: covered areas, and the requirements reviewer's table (null for an
    # analyzer, or a model reviewer that has not finished).
    closing: StreamClosing | None


class ReviewerCommentOut(Schema):
    reviewer: str
    stream: str
    body: str
    path: str | None
    line: int | None


class ReviewerTicketOut(Schema):
    id: int
    round: int
    reviewer: str
    stream: str
    title: str
    body: str
    status: TicketStatus
    status_label: str
    reason: str
    decided_by: str | None
    decided_at: str | None
    issue_number: int | None
    issue_url: str | None
    approval_request: int | None


class ReviewNotesOut(Schema):
    """What reviewers left besides findings: this round's comments, every round's tickets."""

    comments: list[ReviewerCommentOut]
    tickets: list[ReviewerTicketOut]


class SpendTotalsOut(Schema):
    """Tokens a set of model calls spent (input includes cached input) and, where the workspace
    set a price for every model involved, the money: `cost` is a decimal string, null when no
    call had a price; `unpriced` names the models without one."""

    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    requests: int
    calls: int
    counted_locally: int  # calls the provider reported no usage for: our own o200k count
    cost: str | None
    unpriced: list[str]


class SpendRowOut(SpendTotalsOut):
    key: str  # a role, a reviewer, a model, a day (YYYY-MM-DD) or a month (YYYY-MM)


class SpendOut(Schema):
    total: SpendTotalsOut
    by_role: list[SpendRowOut]
    by_name: list[SpendRowOut]
    by_model: list[SpendRowOut]


class ReviewSpendOut(Schema):
    """What the review's model calls cost: the shown round (null before it ran) and every round
    of the pull request."""

    round: SpendOut | None
    pull_request: SpendTotalsOut


class WorkspaceSpendOut(SpendOut):
    """A workspace's spend over every review, per day and per month as well."""

    by_day: list[SpendRowOut]
    by_month: list[SpendRowOut]


class MessageGithubOut(Schema):
    """Where a message stands on GitHub: a reply written there (the message's source is
    github, `posted_at` null), or a message Quorum posted there (`posted_at` set)."""

    comment_id: int
    url: str | None
    posted_at: str | None


class MessageProposalOut(Schema):
    """What a reviewer offered to change about its own finding, and what a person decided."""

    kind: ProposalKind
    priority: t.Priority | None  # lower_priority: the new priority
    fix: str | None  # refine_fix: the new suggested change
    state: ProposalState
    decided_by: str | None
    decided_at: str | None


class ThreadMessageOut(Schema):
    id: int
    subject: str  # node:<id>, disagreement:<id> or note:<stream id>:<index>
    node: int | None  # the finding a node or disagreement thread hangs on
    source: Source
    author: str  # as shown: an address, "agent <name> for <address>", a reviewer, a login
    body: str  # markdown, as written
    created_at: str
    edited_at: str | None  # set once its author corrected it
    revisions: int  # earlier texts kept by edits
    in_reply_to: int | None
    github: MessageGithubOut | None
    proposal: MessageProposalOut | None


class ThreadOut(Schema):
    """One thread: its subject and its messages in the order they were posted."""

    subject: str
    node: int | None
    messages: list[ThreadMessageOut]


class ReviewJson(Schema):
    """One review, schema `quorum.review/v1`: the shown round (the newest, or the last finished
    one when the newest failed or was cancelled), its verdict, findings and notes."""

    schema_: Literal["quorum.review/v1"] = Field(alias="schema")
    space: ReviewSpaceOut
    pull_request: ReviewPullRequestOut
    round: ReviewRoundOut | None
    rounds: list[RoundSummaryOut]
    verdict: ReviewVerdictOut | None  # null while the round runs
    axes: list[ReviewAxisOut]
    cohorts: list[CohortOut]
    nodes: list[ReviewNodeOut]
    disagreements: list[DisagreementOut]
    streams: list[ReviewStreamOut]
    # The round's statistics (classification, panel, critic, failures).
    stats: JsonMap
    notes: ReviewNotesOut
    spend: ReviewSpendOut
    # The shown round's conversation: each thread with messages on its findings, disagreements
    # and reviewers' notes.
    threads: list[ThreadOut]


# The other answers of the reviews routes ---------------------------------------------------


class RoundRefOut(Schema):
    """A round a request queued, cancelled or found."""

    space: int
    round: int
    state: RoundState


class RoundQueueDownOut(Schema):
    """503: the round exists and starts by itself once the task queue is back."""

    detail: str
    space: int
    round: int
    state: RoundState


class RoundRerunOut(Schema):
    space: int
    round: int
    state: RoundState
    rerun_of: int


class FlagClearedOut(Schema):
    space: int
    flagged_for_human: bool


class NodeStatusOut(Schema):
    id: int
    status: t.NodeStatus


class DecidedNodeOut(Schema):
    id: int
    priority: t.Priority
    type: t.NodeType
    status: t.NodeStatus
    # The kept finding a losing side's finding was folded into; null for a canonical finding.
    duplicate_of: int | None


class DisagreementDecidedOut(Schema):
    decision: Literal["first", "second", "dismiss"]
    nodes: list[DecidedNodeOut]


class RequirementsRerunOut(Schema):
    # The requirements reviewer's stream that runs again with the request, or null.
    rerun: str | None


class AxisSubmittedOut(Schema):
    axis: t.AxisName
    result: t.AxisResult
    gated: bool
    round: int


class TicketOut(Schema):
    id: int
    status: TicketStatus
    status_label: str
    reason: str
    issue_number: int | None
    issue_url: str | None
    approval_request: int | None


class IssueFiledOut(Schema):
    ticket: int
    repository: str
    issue_number: int | None
    url: str


class TicketIssueFiledOut(Schema):
    detail: Literal["executed"]
    result: IssueFiledOut
    ticket: TicketOut


class TicketIssuePendingOut(Schema):
    detail: str
    request: int
    ticket: TicketOut


class TicketIssueRefusedOut(Schema):
    """409: the workspace's rule refuses the issue now (with the ticket), or the repository is
    archived and its reviews are read-only (the detail alone)."""

    detail: str
    ticket: TicketOut | None = None


# SARIF ---------------------------------------------------------------------------------------


class SarifLogIn(Schema):
    """A SARIF 2.1.0 log as a tool wrote it (`ruff --output-format sarif`, CodeQL, Semgrep, …).
    Only its outline is typed here; the handler checks the whole document against the SARIF
    2.1.0 schema, and a 422 names the failing path (docs/sarif.md)."""

    model_config = ConfigDict(extra="allow")  # every other SARIF property is the schema's

    version: Text
    runs: list[JsonObject]


class SarifRunOut(Schema):
    """What one run of an uploaded log became (docs/sarif.md)."""

    tool: str
    stream: str  # the reviewer stream its findings are under
    results: int
    on_change: int  # results on lines the change adds
    findings: int  # what they became: one finding per rule per file
    added: int  # findings new with this upload
    already: int  # findings an earlier upload of the same results recorded
    outside: int  # results outside the change: counted, not shown
    rejected: int  # results whose finding failed validation


class SarifUploadOut(Schema):
    """An uploaded log and what became of it. `queued` until a worker has recorded it (poll
    `status_url`); `done` with its runs and the round's verdict after them; `failed` with
    `error` when the round moved on before it was recorded."""

    upload: int
    space: int
    round: int
    state: Literal["queued", "done", "failed"]
    results: int  # results in the log
    runs: list[SarifRunOut]
    verdict: t.VerdictLevel | None
    error: str
    status_url: str


class SarifLogOut(Schema):
    """A SARIF 2.1.0 log (https://docs.oasis-open.org/sarif/sarif/v2.1.0/), valid against the
    schema vendored in reviews/sarif/: one run, tool Quorum."""

    schema_uri: str = Field(alias="$schema")
    version: Literal["2.1.0"]
    runs: list[JsonMap]
