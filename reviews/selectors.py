"""Reads for the guided review: everything a page needs in a constant number of queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.http import Http404

from reviews.domain import types as t
from reviews.domain.disagreements import Disagreement, find_disagreements
from reviews.domain.fingerprints import RoundDelta, round_delta
from reviews.domain.tiers import DisplaySplit, split_for_display
from reviews.models import (
    AxisResult,
    NodeConfirmation,
    ReviewerStream,
    ReviewNode,
    ReviewRound,
    ReviewSpace,
    Verdict,
)


def node_view(node: ReviewNode, confirmations: list[NodeConfirmation] | None = None) -> t.NodeView:
    """The domain's view of a stored node. `confirmations` avoids a query when prefetched."""
    confirmed = confirmations if confirmations is not None else list(node.confirmations.all())
    flags = node.triage_flags or {}
    analyzer = (node.tags or {}).get("analyzer") or {}
    return t.NodeView(
        id=str(node.pk),
        agent=node.stream.agent,
        stream=node.stream.name,
        type=t.NodeType(node.type),
        priority=t.Priority(node.priority),
        confidence=node.confidence,
        status=t.NodeStatus(node.status),
        category=t.Category(node.category),
        severity=t.Severity(node.severity),
        effort=t.Effort(node.effort),
        path=node.path or None,
        start_line=node.start_line,
        end_line=node.end_line,
        side=t.Side(node.side),
        title=node.title,
        body=node.body,
        replacement_lines=tuple(node.replacement_lines)
        if node.replacement_lines is not None
        else None,
        diff=node.fix_diff or None,
        fix_prompt=node.fix_prompt or None,
        map_anchor=node.map_anchor or None,
        duplicate_of=str(node.duplicate_of_id) if node.duplicate_of_id else None,
        credited_agents=tuple(node.credited_agents or ()),
        confirmed_by=tuple(sorted({c.agent for c in confirmed if c.verdict == "real"})),
        exploitable_externally=flags.get("exploitable_externally", False),
        hot_path=flags.get("hot_path", False),
        critical_path=flags.get("critical_path", False),
        functional_effect=flags.get("functional_effect", True),
        defect_classes=tuple(node.tags["defect_classes"])
        if "defect_classes" in (node.tags or {})
        else None,
        analyzer_rule=analyzer.get("rule"),
        high_precision=bool(analyzer.get("high_precision")),
    )


def space_get_for_user(*, space_id: int, workspace_slug: str) -> ReviewSpace:
    """A space of the given workspace (the caller has already checked membership)."""
    try:
        return ReviewSpace.objects.select_related(
            "workspace", "pull_request", "pull_request__repository"
        ).get(pk=space_id, workspace__slug=workspace_slug)
    except ReviewSpace.DoesNotExist:
        raise Http404("No such review.") from None


@dataclass
class ReviewPage:
    space: ReviewSpace
    rounds: list[ReviewRound]
    round: ReviewRound | None
    streams: list[ReviewerStream] = field(default_factory=list)
    nodes: list[ReviewNode] = field(default_factory=list)
    views: dict[int, t.NodeView] = field(default_factory=dict)
    axes: list[AxisResult] = field(default_factory=list)
    verdict: Verdict | None = None
    delta: RoundDelta | None = None
    disagreements: list[Disagreement] = field(default_factory=list)
    display: DisplaySplit | None = None

    def node(self, node_id: Any) -> ReviewNode:
        return self._by_id[int(node_id)]

    def __post_init__(self) -> None:
        self._by_id = {n.pk: n for n in self.nodes}


def review_page(*, space: ReviewSpace) -> ReviewPage:
    """Load one review: rounds, streams, nodes with confirmations, axes, verdict, delta.

    Queries: rounds, streams, nodes (+ stream join), confirmations, axes, verdict, previous
    round fingerprints — seven, whatever the number of nodes, streams or axes.
    """
    rounds = list(space.rounds.order_by("number"))
    if not rounds:
        return ReviewPage(space=space, rounds=[], round=None)
    current = rounds[-1]
    streams = list(current.streams.all())
    nodes = list(
        ReviewNode.objects.filter(round=current)
        .select_related("stream")
        .prefetch_related(
            Prefetch("confirmations", queryset=NodeConfirmation.objects.order_by("id"))
        )
        .order_by("priority", "-confidence", "id")
    )
    views = {n.pk: node_view(n, list(n.confirmations.all())) for n in nodes}
    axes = list(AxisResult.objects.filter(round=current))
    verdict = Verdict.objects.filter(round=current).first()
    delta = None
    if len(rounds) > 1:
        previous = set(
            ReviewNode.objects.filter(round=rounds[-2], duplicate_of__isnull=True)
            .exclude(status__in=[t.NodeStatus.DISMISSED.value, t.NodeStatus.RESOLVED.value])
            .values_list("fingerprint", flat=True)
        )
        current_fps = {
            n.fingerprint for n in nodes if n.duplicate_of_id is None and views[n.pk].active
        }
        delta = round_delta(previous, current_fps)
    node_views = list(views.values())
    return ReviewPage(
        space=space,
        rounds=rounds,
        round=current,
        streams=streams,
        nodes=nodes,
        views=views,
        axes=axes,
        verdict=verdict,
        delta=delta,
        disagreements=find_disagreements(node_views),
        # A demoted duplicate is part of its canonical finding's card, never a card itself.
        display=split_for_display(
            [v for v in node_views if v.duplicate_of is None], t.Tier(current.tier)
        ),
    )


def spaces_for_list(
    *,
    workspace_id: int,
    status: str = "",
    verdict: str = "",
    repository_id: int | None = None,
    flagged: bool = False,
) -> QuerySet[ReviewSpace]:
    """The reviews list: latest round's tier/verdict and open counts by priority, annotated in
    one query whatever the number of spaces. `flagged`: only those that need a person."""
    latest = ReviewRound.objects.filter(space=OuterRef("pk")).order_by("-number")
    open_states = [t.NodeStatus.OPEN.value, t.NodeStatus.CONSENSUS_READY.value]
    counted = Q(
        nodes__round_id=Subquery(latest.values("pk")[:1]),
        nodes__status__in=open_states,
        nodes__duplicate_of__isnull=True,
    )
    spaces = (
        ReviewSpace.objects.filter(workspace_id=workspace_id)
        .select_related("pull_request__repository")
        .annotate(
            round_number=Subquery(latest.values("number")[:1]),
            round_tier=Subquery(latest.values("tier")[:1]),
            round_state=Subquery(latest.values("state")[:1]),
            verdict_level=Subquery(latest.values("verdict__level")[:1]),
            verdict_confidence=Subquery(latest.values("verdict__confidence")[:1]),
            **{
                f"count_{p.value.lower()}": Count(
                    "nodes", filter=counted & Q(nodes__priority=p.value)
                )
                for p in t.Priority
            },
        )
        .order_by("-updated_at", "-pk")
    )
    if status:
        spaces = spaces.filter(status=status)
    if verdict:
        spaces = spaces.filter(verdict_level=verdict)
    if repository_id:
        spaces = spaces.filter(pull_request__repository_id=repository_id)
    if flagged:
        spaces = spaces.filter(flagged_for_human=True)
    return spaces


@dataclass(frozen=True)
class ReviewerComment:
    """A comment a reviewer left with `add_comment`: not a finding, shown as it was written."""

    reviewer: str
    stream: str
    body: str
    path: str = ""
    line: int | None = None
    cohort: str = ""  # the page anchor of the cohort showing `path`, when one does

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.path and self.line else self.path


@dataclass(frozen=True)
class TicketView:
    """A ticket a reviewer proposed, with what its status allows now."""

    ticket: Any  # ReviewerTicket
    reviewer: str
    round_number: int
    state: Any  # reviews.domain.tickets.TicketState
    issue_body: str = ""  # what a GitHub issue's body starts as


@dataclass
class ReviewerNotes:
    comments: list[ReviewerComment] = field(default_factory=list)
    tickets: list[TicketView] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.comments) + len(self.tickets)


def reviewer_notes(
    *,
    space: ReviewSpace,
    streams: list[ReviewerStream],
    cohorts: list[dict] | None = None,
) -> ReviewerNotes:
    """Comments of the shown round's reviewers (from `streams`, no query) and every ticket of the
    space, earlier rounds included: a follow-up proposed once stays until someone decides it.
    One query."""
    from reviews.domain.tickets import issue_body, ticket_state
    from reviews.models import ReviewerTicket

    anchors: dict[str, str] = {}
    for cohort in cohorts or []:
        for path in cohort.get("paths", []):
            anchors.setdefault(path, f"cohort-{cohort['key'][:12]}")
    comments = []
    for stream in streams:
        for note in stream.notes or []:
            if not isinstance(note, dict) or note.get("kind") != "comment":
                continue
            path = str(note.get("path") or "")
            line = note.get("line")
            comments.append(
                ReviewerComment(
                    reviewer=stream.agent,
                    stream=stream.name,
                    body=str(note.get("body") or ""),
                    path=path,
                    line=line if isinstance(line, int) and not isinstance(line, bool) else None,
                    cohort=anchors.get(path, ""),
                )
            )
    rows = (
        ReviewerTicket.objects.filter(round__space=space)
        .select_related("stream", "round", "approval_request", "decided_by")
        .order_by("round__number", "stream__name", "note_index")
    )
    tickets = [
        TicketView(
            ticket=row,
            reviewer=row.stream.agent,
            round_number=row.round.number,
            state=ticket_state(
                row.status,
                request_status=row.approval_request.status if row.approval_request else None,
                request_id=row.approval_request_id,
            ),
            issue_body=issue_body(
                row.body,
                reviewer=row.stream.agent,
                pull_request=str(space.pull_request),
                round_number=row.round.number,
            ),
        )
        for row in rows
    ]
    return ReviewerNotes(comments=comments, tickets=tickets)
