"""Shared vocabulary of the review engine: enums and the `NodeView` record.

Every other module of `reviews.domain` speaks in these types, and the Django layer builds
`NodeView` values from model rows, so the rules never see an ORM object.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class NodeType(StrEnum):
    BUG = "bug"
    SUGGESTION = "suggestion"
    RECOMMENDATION = "recommendation"
    QUESTION = "question"
    TICKET = "ticket"


class Priority(StrEnum):
    P0 = "P0"
    P1 = "P1"
    P2 = "P2"
    P3 = "P3"

    @property
    def rank(self) -> int:
        """0 for P0 (critical) … 3 for P3 (nit): lower is more severe."""
        return int(self.value[1])

    @classmethod
    def from_rank(cls, rank: int) -> Priority:
        return cls(f"P{rank}")


class Category(StrEnum):
    SECURITY = "security"
    STABILITY = "stability"
    CORRECTNESS = "correctness"
    PERFORMANCE = "performance"
    MAINTAINABILITY = "maintainability"
    TESTING = "testing"
    DOCUMENTATION = "documentation"
    STYLE = "style"
    OTHER = "other"


class Severity(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        """0 for critical … 3 for low, aligned with `Priority.rank`."""
        return _SEVERITY_ORDER.index(self)

    @classmethod
    def from_rank(cls, rank: int) -> Severity:
        return _SEVERITY_ORDER[rank]


_SEVERITY_ORDER = (Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW)


def priority_for_severity(severity: Severity) -> Priority:
    """critical→P0, high→P1, medium→P2, low→P3 (used where a severity vote moves a node)."""
    return Priority.from_rank(severity.rank)


def severity_for_priority(priority: Priority) -> Severity:
    return Severity.from_rank(priority.rank)


class Effort(StrEnum):
    SMALL = "small"
    MEDIUM = "medium"
    LARGE = "large"


class Side(StrEnum):
    """Which side of the diff an anchor points at (GitHub's vocabulary)."""

    RIGHT = "RIGHT"
    LEFT = "LEFT"


class NodeStatus(StrEnum):
    OPEN = "open"
    CONSENSUS_READY = "consensus_ready"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"


class StreamKind(StrEnum):
    """What runs behind a stream: a model reviewer, an offline analyzer or a verification lens."""

    MODEL = "model"
    ANALYZER = "analyzer"
    VERIFIER = "verifier"
    EXTERNAL = "external"  # an agent (or a person) outside the pipeline, through MCP

    @property
    def label(self) -> str:
        return _STREAM_KIND_LABELS[self]


_STREAM_KIND_LABELS = {
    StreamKind.MODEL: "model",
    StreamKind.ANALYZER: "offline analyzer",
    StreamKind.VERIFIER: "verification lens",
    StreamKind.EXTERNAL: "outside agent",
}


class ConfirmationLens(StrEnum):
    """Who confirmed a node: a peer reviewer, or one of the verification panel's lenses."""

    PEER = "peer"
    REACHABILITY = "reachability"
    FALSE_POSITIVE = "false_positive"
    SEVERITY = "severity"

    @property
    def label(self) -> str:
        return _LENS_LABELS[self]


_LENS_LABELS = {
    ConfirmationLens.PEER: "peer reviewer",
    ConfirmationLens.REACHABILITY: "reachability / correctness",
    ConfirmationLens.FALSE_POSITIVE: "false-positive causes",
    ConfirmationLens.SEVERITY: "severity calibration",
}


class PublishState(StrEnum):
    """A round's GitHub review: claimed while it is being posted, then posted, failed, or
    uncertain (GitHub did not say whether it took it)."""

    CLAIMED = "claimed"
    POSTED = "posted"
    FAILED = "failed"
    UNCERTAIN = "uncertain"

    @property
    def label(self) -> str:
        return _PUBLISH_STATE_LABELS[self]


_PUBLISH_STATE_LABELS = {
    PublishState.CLAIMED: "publishing",
    PublishState.POSTED: "posted",
    PublishState.FAILED: "failed",
    PublishState.UNCERTAIN: "outcome unknown",
}


class PublishPath(StrEnum):
    """How a posted review reached GitHub."""

    INLINE = "inline"
    FOLDED_FALLBACK = "folded_fallback"

    @property
    def label(self) -> str:
        return _PUBLISH_PATH_LABELS[self]


_PUBLISH_PATH_LABELS = {
    PublishPath.INLINE: "inline comments",
    PublishPath.FOLDED_FALLBACK: "everything folded into the body after a 422",
}


#: Statuses the finaliser counts and the publisher still considers.
ACTIVE_STATUSES = frozenset({NodeStatus.OPEN, NodeStatus.CONSENSUS_READY})


class VerdictLevel(StrEnum):
    SHIP = "ship"
    HOLD = "hold"
    BLOCK = "block"

    @property
    def strictness(self) -> int:
        return _VERDICT_ORDER.index(self)

    def at_least(self, other: VerdictLevel) -> VerdictLevel:
        """The stricter of the two levels."""
        return self if self.strictness >= other.strictness else other


_VERDICT_ORDER = (VerdictLevel.SHIP, VerdictLevel.HOLD, VerdictLevel.BLOCK)


class ReviewState(StrEnum):
    """The review-manager's words for a verdict, used in reports and arbitration."""

    APPROVED = "APPROVED"
    CHANGES_REQUESTED = "CHANGES_REQUESTED"
    BLOCKED = "BLOCKED"


REVIEW_STATE_FOR_VERDICT: dict[VerdictLevel, ReviewState] = {
    VerdictLevel.BLOCK: ReviewState.BLOCKED,
    VerdictLevel.HOLD: ReviewState.CHANGES_REQUESTED,
    VerdictLevel.SHIP: ReviewState.APPROVED,
}


class AxisName(StrEnum):
    CORRECTNESS = "correctness"
    SECURITY = "security"
    TEST_GAP = "testGap"
    VISUAL = "visual"
    API_CONTRACT = "apiContract"
    PERFORMANCE = "performance"


class AxisResult(StrEnum):
    PASS = "pass"  # noqa: S105 — an axis result, not a password
    WARN = "warn"
    FAIL = "fail"
    PARTIAL = "partial"
    UNAVAILABLE = "unavailable"


class Tier(StrEnum):
    LIGHT = "light"
    BALANCED = "balanced"
    THOROUGH = "thorough"
    ADAPTIVE = "adaptive"


class Dimension(StrEnum):
    """What a reviewer looks at. Several dimensions can share one agent."""

    REQUIREMENTS = "requirements"
    IMPLEMENTATION = "implementation"
    QUALITY = "quality"
    ARCHITECTURE = "architecture"
    SECURITY = "security"
    PERFORMANCE = "performance"


class RequirementGap(StrEnum):
    """How a requirements finding departs from the original request."""

    MISSING_FEATURE = "missing_feature"  # asked for, not built
    MISINTERPRETATION = "misinterpretation"  # built, but not what was meant
    PARTIAL_IMPLEMENTATION = "partial_implementation"  # built in part
    SCOPE_CREEP = "scope_creep"  # built without being asked

    @property
    def label(self) -> str:
        return self.value.replace("_", " ")


class AgentKind(StrEnum):
    """The configured reviewer agents; security and performance are briefs, not agents."""

    REQUIREMENTS = "requirements"
    IMPLEMENTATION = "implementation"
    QUALITY = "quality"
    ARCHITECTURE = "architecture"


#: "Security and performance are not new agents: they are the architecture and
#: implementation agents launched with a security or performance brief."
AGENT_FOR_DIMENSION: dict[Dimension, AgentKind] = {
    Dimension.REQUIREMENTS: AgentKind.REQUIREMENTS,
    Dimension.IMPLEMENTATION: AgentKind.IMPLEMENTATION,
    Dimension.QUALITY: AgentKind.QUALITY,
    Dimension.ARCHITECTURE: AgentKind.ARCHITECTURE,
    Dimension.SECURITY: AgentKind.ARCHITECTURE,
    Dimension.PERFORMANCE: AgentKind.IMPLEMENTATION,
}


@dataclass(frozen=True, slots=True)
class ReviewerSpec:
    """One reviewer to launch: a dimension, the agent that runs it, and brief add-ons."""

    dimension: Dimension
    with_requirements_check: bool = False
    # It also checks security: a high-risk change in a round without a security reviewer.
    with_security_check: bool = False

    @property
    def agent(self) -> AgentKind:
        return AGENT_FOR_DIMENSION[self.dimension]

    @property
    def label(self) -> str:
        extras = [
            f"+ {check} check"
            for check, on in (
                ("requirements", self.with_requirements_check),
                ("security", self.with_security_check),
            )
            if on
        ]
        return f"{self.dimension} ({', '.join(extras)})" if extras else str(self.dimension)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """A review node as the rules see it, whatever stores it.

    `agent` is the identity of the agent behind the node's stream; it — not the stream's name —
    decides who is a peer. `credited_agents` lists the other reviewers a canonical node
    credits after consolidation. The four flags at the end feed the severity floors.
    """

    id: str
    agent: str
    type: NodeType
    priority: Priority
    confidence: float
    stream: str = ""
    status: NodeStatus = NodeStatus.OPEN
    category: Category = Category.OTHER
    severity: Severity = Severity.MEDIUM
    effort: Effort = Effort.SMALL
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    side: Side = Side.RIGHT
    title: str = ""
    body: str = ""
    replacement_lines: tuple[str, ...] | None = None
    diff: str | None = None
    fix_prompt: str | None = None
    map_anchor: str | None = None
    duplicate_of: str | None = None
    # A person folded this node into another when deciding a disagreement (the other's id):
    # the lead pass keeps it a duplicate there (reviews/domain/dedup.py).
    folded_into: str | None = None
    credited_agents: tuple[str, ...] = ()
    confirmed_by: tuple[str, ...] = ()
    exploitable_externally: bool = False
    hot_path: bool = False
    critical_path: bool = False
    functional_effect: bool = True
    # Frozen by the lead pass (reviews/domain/matching.py): what defect the node is about.
    defect_classes: tuple[str, ...] | None = None
    # An offline analyzer's finding: its rule, and whether the rule may Block unconfirmed
    # (reviews/domain/precision.py). None for every other reviewer.
    analyzer_rule: str | None = None
    high_precision: bool = False
    # The reviewer's own confidence when `confidence` is calibrated by its measured precision
    # (reviews/domain/reviewer_precision.py, for the verdict only). None: as stated.
    stated_confidence: float | None = None

    @property
    def anchored(self) -> bool:
        return self.path is not None and self.start_line is not None and self.end_line is not None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def location(self) -> str:
        """`path:line` or `path:start-end`, for messages; "(unanchored)" otherwise."""
        if not self.anchored:
            return self.path or "(unanchored)"
        if self.start_line == self.end_line:
            return f"{self.path}:{self.start_line}"
        return f"{self.path}:{self.start_line}-{self.end_line}"

    @property
    def reviewers(self) -> tuple[str, ...]:
        """Every agent this node speaks for: its author first, then credited peers."""
        rest = sorted(set(self.credited_agents) - {self.agent})
        return (self.agent, *rest)

    def overlaps(self, other: NodeView) -> bool:
        """Same file, same diff side, intersecting line ranges (both anchored)."""
        if not (self.anchored and other.anchored):
            return False
        if self.path != other.path or self.side != other.side:
            return False
        assert self.start_line is not None and self.end_line is not None
        assert other.start_line is not None and other.end_line is not None
        return self.start_line <= other.end_line and other.start_line <= self.end_line
