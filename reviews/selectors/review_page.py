"""The review page's reads: the rounds, the shown round's findings, axes, verdict and delta,
in a constant number of queries (`review_page` in full for the exports and the API,
`review_page_bounded` with a page of cards per group for the guided page)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import F, Prefetch, Q
from django.http import Http404

from reviews.domain import types as t
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
from reviews.domain.round_states import RoundRef, delta_base, shown_round, state_label
from reviews.domain.round_stats import FilePreview
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
from reviews.selectors.node_views import node_view


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


@dataclass(frozen=True)
class _Cards:
    """Which findings of the shown round get a card: each group's canonical findings (ids, in
    page order) and the page of each group shown."""

    members: dict[str, list[int]]
    windows: list[GroupPage]

    @property
    def ids(self) -> set[int]:
        return {pk for w in self.windows for pk in self.members[w.key][w.offset : w.end]}

    def groups(self, by_id: Mapping[int, ReviewNode], tier: t.Tier) -> list[FindingGroup]:
        return [
            FindingGroup(
                window=w,
                nodes=[by_id[pk] for pk in self.members[w.key][w.offset : w.end] if pk in by_id],
                tier=tier.value,
            )
            for w in self.windows
        ]


def _light_rows(space: ReviewSpace, current: ReviewRound, *, earlier: bool) -> list[tuple]:
    """One query for the shown round's nodes and, with earlier rounds, the space's canonical
    findings the delta compares."""
    scope = Q(round=current)
    if earlier:
        scope |= Q(duplicate_of__isnull=True)
    return list(
        ReviewNode.objects.filter(space=space)
        .filter(scope)
        .order_by("priority", "-confidence", "id")
        .values_list(*_ROW_FIELDS)
    )


def _card_pages(
    shown: Sequence[tuple], tier: t.Tier, group: str | None, page: int, per_page: int
) -> _Cards:
    members: dict[str, list[int]] = {key: [] for key in group_keys(tier)}
    for row in shown:
        if row[13] is None:  # a demoted duplicate is part of its canonical finding's card
            members[group_of(t.Priority(row[5]), tier)].append(row[0])
    windows = [
        GroupPage(key=key, total=len(ids), page=page if key == group else 1, per_page=per_page)
        for key, ids in members.items()
        if group is None or key == group
    ]
    return _Cards(members=members, windows=windows)


def _previewed_lines(current: ReviewRound, cohort_key: str | None) -> set[tuple[str, int]]:
    """The lines the diff previews rendered show: the first `EAGER_COHORT_PREVIEWS` cohorts',
    or cohort `cohort_key`'s alone."""
    cohorts = current.stats.cohort_list
    previewed = (
        [c for c in cohorts if c.key == cohort_key]
        if cohort_key is not None
        else cohorts[:EAGER_COHORT_PREVIEWS]
    )
    return preview_lines([p for c in previewed for p in c.previews])


def _cards_in_full(current: ReviewRound, wanted: set[int]) -> list[ReviewNode]:
    """The full rows of the findings shown, with their streams and confirmations."""
    return list(
        ReviewNode.objects.filter(round=current, pk__in=wanted)
        .select_related("stream", "decided_by")
        .prefetch_related(
            Prefetch("confirmations", queryset=NodeConfirmation.objects.order_by("id"))
        )
        .order_by("priority", "-confidence", "id")
    )


def _contested(shown: Sequence[tuple], active: set[str]) -> list[t.NodeView]:
    """Only the few findings sharing a location can disagree: only those become node views."""
    anchored = [
        row
        for row in shown
        if row[8] and row[10] is not None and row[11] is not None and row[7] in active
    ]
    ids = contested_ids(
        (str(row[0]), str(row[13]) if row[13] else None, (row[8], row[9], row[10], row[11]))
        for row in anchored
    )
    return [_position(row) for row in anchored if str(row[0]) in ids]


def _delta_rows(rows: Sequence[tuple]) -> list[dict[str, Any]]:
    """The canonical findings of the light rows, as `_round_deltas` reads them."""
    keys = ("round_id", "fingerprint", "status", "title", "path", "start_line", "priority")
    return [
        dict(zip(keys, (r[1], r[14], r[7], r[12], r[8], r[10], r[5]), strict=True))
        for r in rows
        if r[13] is None
    ]


def _flag(space: ReviewSpace) -> dict[str, Any]:
    return {
        "flagged_for_human": space.flagged_for_human,
        "flagged_at": space.flagged_at,
        "flag_reason": space.flag_reason,
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
    rows = _light_rows(space, current, earlier=len(rounds) > 1)
    shown = [row for row in rows if row[1] == current.pk]
    tier = t.Tier(current.tier)
    cards = _card_pages(shown, tier, group, page, per_page)
    active = {s.value for s in t.ACTIVE_STATUSES}
    # What to fix before merge is listed under the verdict: those findings are read in full.
    fix_lines = to_fix(
        ((row[0], t.Priority(row[5]), row[7] in active) for row in shown if row[13] is None),
        tier,
        per_page,
    )
    wanted = cards.ids | {line.node_id for line in fix_lines}
    inline_at = _previewed_lines(current, cohort_key)
    if inline_at:
        wanted |= {row[0] for row in shown if row[13] is None and (row[8], row[10]) in inline_at}
    if focus is not None:
        wanted.add(focus)
    nodes = _cards_in_full(current, wanted)
    by_id = {n.pk: n for n in nodes}
    views = {n.pk: node_view(n, list(n.confirmations.all())) for n in nodes}
    positions = _contested(shown, active)
    axes = list(AxisResult.objects.filter(round=current))
    deltas = _round_deltas(rounds, _delta_rows(rows) if len(rounds) > 1 else [])
    return ReviewPage(
        space=space,
        rounds=rounds,
        round=current,
        streams=streams,
        nodes=nodes,
        views=views,
        axes=axes,
        verdict=getattr(current, "verdict", None),
        delta=deltas[number].delta,
        disagreements=find_disagreements(positions),
        delta_view=deltas[number],
        round_summaries=[
            RoundSummary(round=r, verdict_level=r.verdict_level, delta=deltas[r.number])
            for r in rounds
        ],
        groups=cards.groups(by_id, tier),
        finding_count=sum(len(ids) for ids in cards.members.values()),
        to_fix=[(line, by_id[line.node_id]) for line in fix_lines],
        inline_at=inline_at,
        findings_per_path=dict(Counter(row[8] for row in shown if row[13] is None and row[8])),
        flag=_flag(current.space),
    )
