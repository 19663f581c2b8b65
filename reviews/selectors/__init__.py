"""Reads for the guided review: everything a page needs in a constant number of queries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import (
    BooleanField,
    Case,
    Count,
    DateTimeField,
    ExpressionWrapper,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Sum,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce
from django.http import Http404

from config.application_errors import ErrorCode
from reviews.domain import types as t
from reviews.domain.consensus import PERSON_PREFIX
from reviews.domain.disagreements import Disagreement, contested_ids, find_disagreements
from reviews.domain.finding_groups import (
    CARDS_PER_GROUP,
    FixLine,
    GroupPage,
    group_keys,
    group_of,
    to_fix,
)
from reviews.domain.fingerprints import RoundDelta, round_delta
from reviews.domain.reviewer_precision import (
    RECENT_DECISIONS,
    Calibration,
    FindingFacts,
    ReviewerPrecision,
    RoundFacts,
    decisions,
    reviewer_figures,
)
from reviews.domain.round_states import RoundRef, delta_base, shown_round, state_label
from reviews.domain.round_stats import CohortSummary, FilePreview
from reviews.domain.spend import CallRecord, CallRole, Price, Spend, spend
from reviews.domain.tiers import DisplaySplit, split_for_display
from reviews.models import (
    AxisResult,
    ModelCall,
    ModelPrice,
    NodeConfirmation,
    ReviewerStream,
    ReviewNode,
    ReviewRound,
    ReviewSpace,
    ThreadMessage,
    Verdict,
)
from workspaces.rules import RuleError

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


def node_view(node: ReviewNode, confirmations: list[NodeConfirmation] | None = None) -> t.NodeView:
    """The domain's view of a stored node. `confirmations` avoids a query when prefetched."""
    confirmed = confirmations if confirmations is not None else list(node.confirmations.all())
    flags = node.triage_flags or {}
    tags = node.tags
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
        folded_into=str(tags.folded_into) if tags.folded_into is not None else None,
        credited_agents=tuple(node.credited_agents or ()),
        confirmed_by=tuple(sorted({c.agent for c in confirmed if c.verdict == "real"})),
        exploitable_externally=flags.get("exploitable_externally", False),
        hot_path=flags.get("hot_path", False),
        critical_path=flags.get("critical_path", False),
        functional_effect=flags.get("functional_effect", True),
        defect_classes=tuple(tags.defect_classes) if tags.defect_classes is not None else None,
        analyzer_rule=tags.analyzer.rule if tags.analyzer else None,
        high_precision=bool(tags.analyzer and tags.analyzer.high_precision),
    )


def space_get_for_user(*, space_id: int, workspace_slug: str) -> ReviewSpace:
    """A space of the given workspace (the caller has already checked membership)."""
    try:
        return ReviewSpace.objects.select_related(
            "workspace", "pull_request", "pull_request__repository"
        ).get(pk=space_id, workspace__slug=workspace_slug)
    except ReviewSpace.DoesNotExist:
        raise Http404("No such review.") from None


NO_ROUND = "This review has no round yet."


def round_newest(*, space: ReviewSpace) -> ReviewRound:
    """The round an action on the review as a whole applies to: its newest. Raises a 409
    RuleError when it has none yet (page and API alike)."""
    review_round = space.rounds.order_by("-number").first()
    if review_round is None:
        raise RuleError(NO_ROUND, code=ErrorCode.NO_ROUND, http_status=409)
    return review_round


def disagreement_round(*, space: ReviewSpace, key: int) -> ReviewRound:
    """The round of a disagreement: the round of its key node (an earlier round read in the
    switcher too), else the newest."""
    key_node = ReviewNode.objects.filter(pk=key, space=space).select_related("round").first()
    return key_node.round if key_node is not None else round_newest(space=space)


@dataclass(frozen=True)
class GoneFinding:
    """A finding of the baseline round that the shown round no longer has."""

    fingerprint: str
    title: str
    location: str
    priority: str


@dataclass(frozen=True)
class DeltaView:
    """What changed since the last finished round of a different head (`baseline`). A round
    on the same head as an earlier finished one (`same_head_as`: a re-run, an unchanged push)
    says so: its differences are the reviewers' variation, not the change's."""

    baseline: int | None = None
    same_head_as: int | None = None
    delta: RoundDelta | None = None
    gone: list[GoneFinding] = field(default_factory=list)

    @property
    def summary(self) -> str:
        parts = []
        if self.same_head_as is not None:
            parts.append(f"same head as round {self.same_head_as}")
        if self.delta is not None and self.baseline is not None:
            d = self.delta
            parts.append(
                f"since round {self.baseline}: {len(d.new)} new, {len(d.persisting)} still open, "
                f"{len(d.gone)} gone"
            )
        return "; ".join(parts)

    def label(self, fingerprint: str) -> str:
        """A finding's place in the delta: new, still open, or "" (nothing to compare)."""
        if self.delta is None:
            return ""
        if fingerprint in self.delta.new:
            return "new"
        if fingerprint in self.delta.persisting:
            return "still open"
        return ""


@dataclass(frozen=True)
class RoundSummary:
    """One round in the switcher: number, state in words, verdict, head, time, delta."""

    round: ReviewRound
    verdict_level: str | None
    delta: DeltaView

    @property
    def number(self) -> int:
        return self.round.number

    @property
    def state_label(self) -> str:
        return state_label(self.round.state)

    @property
    def verdict_label(self) -> str:
        return self.verdict_level.capitalize() if self.verdict_level else ""

    @property
    def short_head(self) -> str:
        return self.round.head_sha[:7]

    @property
    def at(self):
        return self.round.finished_at or self.round.created_at


@dataclass
class ReviewPage:
    space: ReviewSpace
    rounds: Sequence[ReviewRound]
    round: ReviewRound | None
    streams: list[ReviewerStream] = field(default_factory=list)
    nodes: list[ReviewNode] = field(default_factory=list)
    views: dict[int, t.NodeView] = field(default_factory=dict)
    axes: list[AxisResult] = field(default_factory=list)
    verdict: Verdict | None = None
    delta: RoundDelta | None = None
    disagreements: list[Disagreement] = field(default_factory=list)
    display: DisplaySplit | None = None
    # What the shown round's delta compares with, and every round for the switcher.
    delta_view: DeltaView = field(default_factory=DeltaView)
    round_summaries: list[RoundSummary] = field(default_factory=list)
    # The bounded page (review_page_bounded): each group's page of cards, the number of
    # findings with a card, and the space's flag as read with the rounds.
    groups: list[FindingGroup] = field(default_factory=list)
    finding_count: int = 0
    flag: dict[str, Any] | None = None
    inline_at: set[tuple[str, int]] = field(default_factory=set)
    # Every canonical finding of the round per file, for the file tree (not only the cards').
    findings_per_path: dict[str, int] = field(default_factory=dict)
    # The active P0/P1 findings, each with the group page holding its card (the bounded page).
    to_fix: list[tuple[FixLine, ReviewNode]] = field(default_factory=list)

    def node(self, node_id: Any) -> ReviewNode:
        return self._by_id[int(node_id)]

    @property
    def newest(self) -> ReviewRound | None:
        return self.rounds[-1] if self.rounds else None

    @property
    def showing_newest(self) -> bool:
        return self.round is not None and self.round.pk == self.rounds[-1].pk

    def __post_init__(self) -> None:
        self._by_id = {n.pk: n for n in self.nodes}


def _open_fingerprints(rows: Sequence[Mapping[str, Any]], round_id: int) -> set[str]:
    """A round's canonical findings still open (neither dismissed nor resolved)."""
    active = {s.value for s in t.ACTIVE_STATUSES}
    return {r["fingerprint"] for r in rows if r["round_id"] == round_id and r["status"] in active}


def _round_deltas(
    rounds: Sequence[ReviewRound], rows: Sequence[Mapping[str, Any]]
) -> dict[int, DeltaView]:
    """Each round's delta from the canonical findings of the space (`rows`), no query."""
    refs = [RoundRef(r.number, r.state, r.head_sha) for r in rounds]
    by_number = {r.number: r for r in rounds}
    out = {}
    for r in rounds:
        base = delta_base(refs, r.number)
        delta, gone = None, []
        if base.baseline is not None:
            before = by_number[base.baseline]
            delta = round_delta(_open_fingerprints(rows, before.pk), _open_fingerprints(rows, r.pk))
            seen = set()
            for row in rows:
                fp = row["fingerprint"]
                if row["round_id"] == before.pk and fp in delta.gone and fp not in seen:
                    seen.add(fp)
                    location = row["path"] or "whole change"
                    if row["path"] and row["start_line"]:
                        location = f"{row['path']}:{row['start_line']}"
                    gone.append(GoneFinding(fp, row["title"], location, row["priority"]))
        out[r.number] = DeltaView(base.baseline, base.same_head_as, delta, gone)
    return out


@dataclass(frozen=True)
class FindingGroup:
    """One group of the findings list and the cards of the page shown (`nodes`)."""

    window: GroupPage
    nodes: list[ReviewNode]
    tier: str

    @property
    def key(self) -> str:
        return self.window.key

    @property
    def total(self) -> int:
        return self.window.total

    @property
    def below(self) -> bool:
        return self.key not in {p.value for p in t.Priority}


@dataclass
class _Frame:
    """What every reading of a review starts from: the rounds and the one shown."""

    rounds: list[Any]  # ReviewRound, annotated with `verdict_level`
    current: Any
    number: int | None


def _frame(space: ReviewSpace, round_number: int | None, *related: str) -> _Frame:
    # Joining the space reads it fresh (the live page holds the one it loaded at connect);
    # `space.rounds` would hand each round that same object instead.
    source = ReviewRound.objects.filter(space_id=space.pk) if "space" in related else space.rounds
    rounds = list(
        source.order_by("number")
        .select_related(*related)
        .annotate(verdict_level=F("verdict__level"))
    )
    if not rounds:
        if round_number is not None:
            raise Http404("No such round.")
        return _Frame(rounds=[], current=None, number=None)
    if round_number is not None and round_number not in {r.number for r in rounds}:
        raise Http404(f"This review has no round {round_number}.")
    number = shown_round([RoundRef(r.number, r.state, r.head_sha) for r in rounds], round_number)
    assert number is not None  # there is at least one round
    current = next(r for r in rounds if r.number == number)
    return _Frame(rounds=rounds, current=current, number=number)


def review_page(*, space: ReviewSpace, round_number: int | None = None) -> ReviewPage:
    """Load one review in full: rounds, streams, nodes with confirmations, axes, verdict,
    delta. For the JSON export, the report and the API; the page reads `review_page_bounded`.

    The round shown is `round_number` when the space has it (else Http404); otherwise the
    newest, or the last finished one when the newest failed or was cancelled
    (reviews/domain/round_states.py `shown_round`).

    Queries: rounds (with their verdict levels), streams, nodes (+ stream join),
    confirmations, axes, verdict, the space's canonical fingerprints — seven, whatever the
    number of rounds, nodes, streams or axes.
    """
    frame = _frame(space, round_number)
    rounds, current, number = frame.rounds, frame.current, frame.number
    if current is None or number is None:
        return ReviewPage(space=space, rounds=[], round=None)
    streams = list(current.streams.all())
    nodes = list(
        ReviewNode.objects.filter(round=current)
        .select_related("stream", "decided_by")
        .prefetch_related(
            Prefetch("confirmations", queryset=NodeConfirmation.objects.order_by("id"))
        )
        .order_by("priority", "-confidence", "id")
    )
    views = {n.pk: node_view(n, list(n.confirmations.all())) for n in nodes}
    axes = list(AxisResult.objects.filter(round=current))
    verdict = Verdict.objects.filter(round=current).first()
    rows = (
        list(
            ReviewNode.objects.filter(space=space, duplicate_of__isnull=True).values(
                "round_id", "fingerprint", "status", "title", "path", "start_line", "priority"
            )
        )
        if len(rounds) > 1
        else []
    )
    deltas = _round_deltas(rounds, rows)
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
        delta=deltas[number].delta,
        disagreements=find_disagreements(node_views),
        # A demoted duplicate is part of its canonical finding's card, never a card itself.
        display=split_for_display(
            [v for v in node_views if v.duplicate_of is None], t.Tier(current.tier)
        ),
        delta_view=deltas[number],
        round_summaries=[
            RoundSummary(round=r, verdict_level=r.verdict_level, delta=deltas[r.number])
            for r in rounds
        ],
        finding_count=sum(1 for v in node_views if v.duplicate_of is None),
    )


# What the bounded page reads of every node of the shown round (and, with earlier rounds, of
# the space's canonical findings for the delta): no JSON and no long text, so a thousand rows
# cost little. The full rows are read only for the cards shown.
_ROW_FIELDS = (
    "pk",
    "round_id",
    "stream__agent",
    "stream__name",
    "type",
    "priority",
    "confidence",
    "status",
    "path",
    "side",
    "start_line",
    "end_line",
    "title",
    "duplicate_of_id",
    "fingerprint",
)


def _position(row: tuple) -> t.NodeView:
    """Where a node sits and what it claims, for `find_disagreements` (which reads nothing
    else); the cards' views are built from the full rows by `node_view`."""
    pk, _r, agent, stream, type_, priority, confidence, status, path, side, start, end = row[:12]
    title, duplicate_of = row[12], row[13]
    return t.NodeView(
        id=str(pk),
        agent=agent,
        stream=stream,
        type=t.NodeType(type_),
        priority=t.Priority(priority),
        confidence=confidence,
        status=t.NodeStatus(status),
        path=path or None,
        start_line=start,
        end_line=end,
        side=t.Side(side),
        title=title,
        duplicate_of=str(duplicate_of) if duplicate_of else None,
    )


#: Cohorts whose diff previews the page renders at once; the others load theirs when opened.
EAGER_COHORT_PREVIEWS = 3


def preview_lines(previews: Sequence[FilePreview]) -> set[tuple[str, int]]:
    """The new-side lines the diff previews show, where a finding is shown inline."""
    return {
        (preview.path, line)
        for preview in previews
        for hunk in preview.hunks
        for line in range(hunk.new_start, hunk.new_start + max(hunk.new_count, 1))
    }


def review_page_bounded(
    *,
    space: ReviewSpace,
    round_number: int | None = None,
    group: str | None = None,
    page: int = 1,
    per_page: int = CARDS_PER_GROUP,
    cohort_key: str | None = None,
    focus: int | None = None,
) -> ReviewPage:
    """The guided review page: like `review_page`, but with a card only for the first
    `per_page` findings of each group (reviews/domain/finding_groups.py), or for page `page`
    of `group` alone when one is named. The findings shown inline in the diff previews
    rendered (the first `EAGER_COHORT_PREVIEWS` cohorts', or cohort `cohort_key`'s alone)
    are loaded too, and `focus`, a node wanted whatever its page.

    Every node of the round is read as one light row (for the groups' counts and pages, and
    for the disagreements); the full node, its stream and its confirmations only for the cards.
    Queries: rounds (with verdict and the space's flag), streams, light rows, cards, their
    confirmations, axes — six, whatever the number of rounds, nodes, streams or axes.
    """
    frame = _frame(space, round_number, "verdict", "space", "rerun_of")
    rounds, current, number = frame.rounds, frame.current, frame.number
    if current is None or number is None:
        return ReviewPage(space=space, rounds=[], round=None)
    streams = list(current.streams.all())
    # One query for the shown round's nodes and, with earlier rounds, the space's canonical
    # findings the delta compares.
    scope = Q(round=current)
    if len(rounds) > 1:
        scope |= Q(duplicate_of__isnull=True)
    rows = list(
        ReviewNode.objects.filter(space=space)
        .filter(scope)
        .order_by("priority", "-confidence", "id")
        .values_list(*_ROW_FIELDS)
    )
    shown = [row for row in rows if row[1] == current.pk]
    tier = t.Tier(current.tier)
    members: dict[str, list[int]] = {key: [] for key in group_keys(tier)}
    for row in shown:
        if row[13] is None:  # a demoted duplicate is part of its canonical finding's card
            members[group_of(t.Priority(row[5]), tier)].append(row[0])
    windows = [
        GroupPage(key=key, total=len(ids), page=page if key == group else 1, per_page=per_page)
        for key, ids in members.items()
        if group is None or key == group
    ]
    card_ids = {pk for w in windows for pk in members[w.key][w.offset : w.end]}
    active = {s.value for s in t.ACTIVE_STATUSES}
    # What to fix before merge is listed under the verdict: those findings are read in full.
    fix_lines = to_fix(
        ((row[0], t.Priority(row[5]), row[7] in active) for row in shown if row[13] is None),
        tier,
        per_page,
    )
    wanted = card_ids | {line.node_id for line in fix_lines}
    cohorts = current.stats.cohort_list
    previewed = (
        [c for c in cohorts if c.key == cohort_key]
        if cohort_key is not None
        else cohorts[:EAGER_COHORT_PREVIEWS]
    )
    inline_at = preview_lines([p for c in previewed for p in c.previews])
    if inline_at:
        wanted |= {row[0] for row in shown if row[13] is None and (row[8], row[10]) in inline_at}
    if focus is not None:
        wanted.add(focus)
    nodes = list(
        ReviewNode.objects.filter(round=current, pk__in=wanted)
        .select_related("stream", "decided_by")
        .prefetch_related(
            Prefetch("confirmations", queryset=NodeConfirmation.objects.order_by("id"))
        )
        .order_by("priority", "-confidence", "id")
    )
    by_id = {n.pk: n for n in nodes}
    views = {n.pk: node_view(n, list(n.confirmations.all())) for n in nodes}
    # Only the few findings sharing a location can disagree: only those become node views.
    anchored = [
        row
        for row in shown
        if row[8] and row[10] is not None and row[11] is not None and row[7] in active
    ]
    ids = contested_ids(
        (str(row[0]), str(row[13]) if row[13] else None, (row[8], row[9], row[10], row[11]))
        for row in anchored
    )
    positions = [_position(row) for row in anchored if str(row[0]) in ids]
    axes = list(AxisResult.objects.filter(round=current))
    verdict = getattr(current, "verdict", None)
    keys = ("round_id", "fingerprint", "status", "title", "path", "start_line", "priority")
    delta_rows = (
        [
            dict(zip(keys, (r[1], r[14], r[7], r[12], r[8], r[10], r[5]), strict=True))
            for r in rows
            if r[13] is None
        ]
        if len(rounds) > 1
        else []
    )
    deltas = _round_deltas(rounds, delta_rows)
    fresh = current.space
    return ReviewPage(
        space=space,
        rounds=rounds,
        round=current,
        streams=streams,
        nodes=nodes,
        views=views,
        axes=axes,
        verdict=verdict,
        delta=deltas[number].delta,
        disagreements=find_disagreements(positions),
        delta_view=deltas[number],
        round_summaries=[
            RoundSummary(round=r, verdict_level=r.verdict_level, delta=deltas[r.number])
            for r in rounds
        ],
        groups=[
            FindingGroup(
                window=w,
                nodes=[by_id[pk] for pk in members[w.key][w.offset : w.end] if pk in by_id],
                tier=tier.value,
            )
            for w in windows
        ],
        finding_count=sum(len(ids) for ids in members.values()),
        to_fix=[(line, by_id[line.node_id]) for line in fix_lines],
        inline_at=inline_at,
        findings_per_path=dict(Counter(row[8] for row in shown if row[13] is None and row[8])),
        flag={
            "flagged_for_human": fresh.flagged_for_human,
            "flagged_at": fresh.flagged_at,
            "flag_reason": fresh.flag_reason,
        },
    )


class SpaceListAnnotations(TypedDict):
    """What `spaces_for_list` adds to each space (and `count_p0`…`count_p3`)."""

    round_number: int | None
    round_tier: str | None
    round_state: str | None
    verdict_level: str | None
    verdict_confidence: float | None


def spaces_for_list(
    *,
    workspace_id: int,
    status: str = "",
    verdict: str = "",
    repository_id: int | None = None,
    flagged: bool = False,
) -> QuerySet[WithAnnotations[ReviewSpace, SpaceListAnnotations]]:
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
    """A comment a reviewer left with `add_note`: not a finding, shown as it was written."""

    reviewer: str
    stream: str
    body: str
    path: str = ""
    line: int | None = None
    cohort: str = ""  # the page anchor of the cohort showing `path`, when one does
    key: str = ""  # its thread: note:<stream id>:<index in the stream's notes>

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
    cohorts: list[CohortSummary] | None = None,
) -> ReviewerNotes:
    """Comments of the shown round's reviewers (from `streams`, no query) and every ticket of the
    space, earlier rounds included: a follow-up proposed once stays until someone decides it.
    One query."""
    from reviews.domain.tickets import issue_body, ticket_state
    from reviews.models import ReviewerTicket

    anchors: dict[str, str] = {}
    for cohort in cohorts or []:
        for path in cohort.paths:
            anchors.setdefault(path, f"cohort-{cohort.key[:12]}")
    comments = []
    for stream in streams:
        for index, note in enumerate(stream.notes or []):
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
                    key=f"note:{stream.pk}:{index}",
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


# -- threads ---------------------------------------------------------------------------------

#: The sections that show threads: a finding's (list and diff), a disagreement's, a note's.
THREAD_SECTIONS = frozenset({"disagreements", "findings", "cohorts", "notes"})


def page_threads(
    *, space: ReviewSpace, review_round: ReviewRound | None, streams: Sequence[ReviewerStream]
) -> dict[str, list[ThreadMessage]]:
    """The messages of every thread the page can show (the shown round's findings and
    disagreements, its reviewers' notes), by subject, in the order they were posted. One
    query, whatever the number of threads."""
    if review_round is None:
        return {}
    notes = [
        f"note:{stream.pk}:{index}"
        for stream in streams
        for index in range(len(stream.notes or []))
    ]
    rows = ThreadMessage.objects.filter(space=space).filter(
        Q(node__round_id=review_round.pk) | Q(subject__in=notes)
    )
    threads: dict[str, list[ThreadMessage]] = {}
    from_github: set[int] = set()
    for message in rows.order_by("pk"):
        threads.setdefault(message.subject, []).append(message)
        if message.source == ThreadMessage.Source.GITHUB:
            from_github.add(message.pk)
        # A reviewer's answer to a question asked on GitHub may be posted there.
        message.answers_github = (  # type: ignore[attr-defined]  # for the page only
            message.source == ThreadMessage.Source.REVIEWER
            and message.in_reply_to_id in from_github
        )
    return threads


def editable_message_ids(space_id: int, user_id: int) -> list[int]:
    """The messages of the space the person wrote and may still edit (the edit window)."""
    from django.utils import timezone

    from reviews.domain.threads import EDIT_WINDOW, Source

    return list(
        ThreadMessage.objects.filter(
            space_id=space_id,
            author_id=user_id,
            source__in=(Source.PERSON.value, Source.AGENT.value),
            created_at__gte=timezone.now() - EDIT_WINDOW,
        ).values_list("pk", flat=True)
    )


# -- spend ----------------------------------------------------------------------------------


def _call_records(calls: QuerySet[ModelCall]) -> list[CallRecord]:
    return [record for _, record in _round_records(calls)]


def _round_records(calls: QuerySet[ModelCall]) -> list[tuple[int, CallRecord]]:
    rows = calls.values_list(
        "round_id",
        "role",
        "name",
        "model",
        "input_tokens",
        "cached_input_tokens",
        "output_tokens",
        "requests",
        "counted_locally",
        "created_at",
    )
    return [
        (
            round_id,
            CallRecord(
                role=CallRole(role),
                name=name,
                model=model,
                input_tokens=tin,
                cached_input_tokens=cached,
                output_tokens=tout,
                requests=requests,
                counted_locally=local,
                day=created.date(),
            ),
        )
        for round_id, role, name, model, tin, cached, tout, requests, local, created in rows
    ]


def model_prices(workspace_id: int) -> dict[str, Price]:
    """The workspace's prices per million tokens, by model name."""
    return {
        p.model: Price(
            input=p.input_per_million,
            output=p.output_per_million,
            cached_input=p.cached_input_per_million,
        )
        for p in ModelPrice.objects.filter(workspace_id=workspace_id)
    }


def _tokens(calls: QuerySet[ModelCall]) -> int:
    sums = calls.aggregate(i=Coalesce(Sum("input_tokens"), 0), o=Coalesce(Sum("output_tokens"), 0))
    return int(sums["i"]) + int(sums["o"])


def round_spent_tokens(review_round: ReviewRound) -> int:
    """Input and output tokens every model call of the round spent (cached input in full)."""
    return _tokens(ModelCall.objects.filter(round=review_round))


def space_spent_tokens(space: ReviewSpace) -> int:
    """The same over every round of the review (the pull request)."""
    return _tokens(ModelCall.objects.filter(round__space=space))


def review_spend(
    space: ReviewSpace, review_round: ReviewRound | None
) -> tuple[Spend | None, Spend]:
    """The shown round's spend and the review's (every round), from one read of its ledger
    and one of the workspace's prices."""
    prices = model_prices(space.workspace_id)
    rows = _round_records(ModelCall.objects.filter(round__space=space))
    of_round = None
    if review_round is not None:
        of_round = spend([r for round_id, r in rows if round_id == review_round.pk], prices)
    return of_round, spend([r for _, r in rows], prices)


def round_spend(review_round: ReviewRound, prices: Mapping[str, Price] | None = None) -> Spend:
    if prices is None:
        prices = model_prices(review_round.space.workspace_id)
    return spend(_call_records(ModelCall.objects.filter(round=review_round)), prices)


def space_spend(space: ReviewSpace, prices: Mapping[str, Price] | None = None) -> Spend:
    if prices is None:
        prices = model_prices(space.workspace_id)
    return spend(_call_records(ModelCall.objects.filter(round__space=space)), prices)


def workspace_spend(
    workspace_id: int, *, since: datetime | None = None, until: datetime | None = None
) -> Spend:
    """A workspace's spend by day, month, role, reviewer and model (since/until: created_at
    bounds)."""
    calls = ModelCall.objects.filter(round__space__workspace_id=workspace_id)
    if since is not None:
        calls = calls.filter(created_at__gte=since)
    if until is not None:
        calls = calls.filter(created_at__lt=until)
    return spend(_call_records(calls), model_prices(workspace_id))


def reviewer_precision(
    workspace: Any,
    *,
    repository: Any = None,
    last: int | None = None,
    exclude_round: int | None = None,
) -> list[ReviewerPrecision]:
    """Each reviewer's precision from people's decisions on its canonical findings, per rule
    under it, with the calibration of its confidence (reviews/domain/reviewer_precision.py):
    over the workspace (`workspace`: one or its id), or one repository of it (`repository`: one
    or its id); each reviewer's `last` most recent decisions (None: all). `exclude_round`: a
    round whose own findings are left out (a verdict calibrates from other rounds' decisions).

    Two queries whatever the history: every finding of the workspace's rounds (a few columns;
    duplicates too, a finding seen again after a push is not fixed), and its finished rounds
    with the content keys of their changed files (what a push changed)."""
    workspace_id = getattr(workspace, "pk", workspace)
    repository_id = getattr(repository, "pk", repository)
    nodes = ReviewNode.objects.filter(space__workspace_id=workspace_id)
    rounds = ReviewRound.objects.filter(
        space__workspace_id=workspace_id, state=ReviewRound.State.FINISHED
    )
    if repository_id is not None:
        nodes = nodes.filter(space__pull_request__repository_id=repository_id)
        rounds = rounds.filter(space__pull_request__repository_id=repository_id)
    person_confirmed = (
        NodeConfirmation.objects.filter(
            node=OuterRef("pk"), agent__startswith=PERSON_PREFIX, verdict="real"
        )
        .order_by("created_at")
        .values("created_at")[:1]
    )
    rows = nodes.annotate(
        confirmed_at=Subquery(person_confirmed),
        rule=KT("tags__analyzer__rule"),  # as text: no JSON to decode
        # The earlier decision dismissal memory credited the finding with, when it did.
        remembered=KT("tags__memory__decided_at"),
        # Booleans and times only where they say something: fewer values to decode per row.
        has_reason=ExpressionWrapper(~Q(decision_reason=""), output_field=BooleanField()),
        upheld_at=Case(
            When(tags__has_key="decided", then=F("updated_at")),
            default=None,
            output_field=DateTimeField(),
        ),
    ).values_list(
        "pk",
        "round_id",
        "stream__name",
        "rule",
        "category",
        "confidence",
        "status",
        "duplicate_of_id",
        "path",
        "title",
        "fingerprint",
        "decided_at",
        "has_reason",
        "remembered",
        "confirmed_at",
        "upheld_at",
    )
    findings = [
        FindingFacts(
            id=pk,
            round=round_id,
            reviewer=reviewer,
            rule=rule or category,
            confidence=confidence,
            status=t.NodeStatus(status),
            canonical=duplicate_of is None,
            path=path or None,
            category=category,
            title=title,
            fingerprint=fingerprint,
            decided_at=decided_at,
            reason=has_reason,
            credited=_credited(decided_at, remembered),
            confirmed_at=confirmed_at,
            upheld_at=upheld_at,
        )
        for (
            pk,
            round_id,
            reviewer,
            rule,
            category,
            confidence,
            status,
            duplicate_of,
            path,
            title,
            fingerprint,
            decided_at,
            has_reason,
            remembered,
            confirmed_at,
            upheld_at,
        ) in rows
    ]
    if all(f.round == exclude_round for f in findings):
        return []  # nothing decided elsewhere: no round to read (a workspace's first review)
    finished = [
        RoundFacts(
            id=pk,
            space=space_id,
            number=number,
            state=state,
            head=head,
            at=created_at,
            files={f["path"]: f["key"] for f in files} if files is not None else None,
        )
        for pk, space_id, number, state, head, created_at, files in rounds.values_list(
            "pk", "space_id", "number", "state", "head_sha", "created_at", "stats__files"
        )
    ]
    decided = [d for d in decisions(findings, finished) if d.round != exclude_round]
    return reviewer_figures(decided, last=last)


def precision_drops(workspace: Any) -> dict[str, tuple[Any, Any]]:
    """The reviewers of a workspace whose precision dropped lately (reviewer name → the
    latest and the earlier figures): their calibration is stale whatever model they run on."""
    return {r.reviewer: r.drop for r in reviewer_precision(workspace) if r.drop}


def _credited(decided_at: datetime | None, remembered: str | None) -> bool:
    """The finding's decision is the one dismissal memory credited it with (`tags.memory`
    names its time), not a person's decision on this finding."""
    if remembered is None or decided_at is None:
        return False
    try:
        return datetime.fromisoformat(remembered) == decided_at
    except ValueError:
        return True  # a credit it cannot read: not counted as a decision of its own


def reviewer_calibrations(
    workspace: Any, *, exclude_round: int | None = None
) -> dict[str, Calibration]:
    """Reviewer → the calibration of its confidence over its RECENT_DECISIONS most recent
    decisions in the workspace, leaving out `exclude_round`'s own findings: what the verdict,
    the finding cards and the report read (`reviewer_precision`, two queries)."""
    return {
        r.reviewer: r.calibration
        for r in reviewer_precision(workspace, last=RECENT_DECISIONS, exclude_round=exclude_round)
    }


def thread_rows(
    *, space: ReviewSpace, key: str | None = None, round_of: ReviewPage | None = None
) -> list[ThreadMessage]:
    """The space's thread messages in the order they were posted (one thread's with `key`),
    each with `revision_count`, the number of earlier texts an edit kept. With `round_of`,
    only the threads of that page's round: its findings and disagreements (by node) and its
    reviewers' notes (by stream). One query."""
    from reviews.domain.threads import Subject, SubjectKind, ThreadError

    rows = (
        ThreadMessage.objects.filter(space=space)
        .select_related("proposal_decided_by")
        .annotate(revision_count=Count("revisions"))
        .order_by("pk")
    )
    if key is not None:
        rows = rows.filter(subject=key)
    if round_of is None:
        return [*rows]
    node_ids = {n.pk for n in round_of.nodes}
    stream_ids = {s.pk for s in round_of.streams}
    kept: list[ThreadMessage] = []
    for row in rows:
        try:
            subject = Subject.parse(row.subject)
        except ThreadError:
            continue
        if subject.kind is SubjectKind.NOTE:
            if subject.ids[0] in stream_ids:
                kept.append(row)
        elif row.node_id in node_ids:
            kept.append(row)
    return kept
