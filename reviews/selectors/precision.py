"""Reads for reviewer precision: every decided finding of a workspace and its finished rounds,
turned into each reviewer's precision and confidence calibration
(reviews/domain/reviewer_precision.py does the figures)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import (
    BooleanField,
    Case,
    DateTimeField,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    When,
)
from django.db.models.fields.json import KT

from reviews.domain import types as t
from reviews.domain.consensus import PERSON_PREFIX
from reviews.domain.reviewer_precision import (
    RECENT_DECISIONS,
    Calibration,
    FindingFacts,
    ReviewerPrecision,
    RoundFacts,
    decisions,
    reviewer_figures,
)
from reviews.models import NodeConfirmation, ReviewNode, ReviewRound


def _finding_rows(nodes: QuerySet[ReviewNode]) -> QuerySet[ReviewNode, tuple]:
    """A few columns of each finding, with the time a person confirmed it and what its
    decision was worth, as one row."""
    person_confirmed = (
        NodeConfirmation.objects.filter(
            node=OuterRef("pk"), agent__startswith=PERSON_PREFIX, verdict="real"
        )
        .order_by("created_at")
        .values("created_at")[:1]
    )
    return nodes.annotate(
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


def _finding_facts(rows: Iterable[tuple]) -> list[FindingFacts]:
    return [
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


def _round_facts(rounds: QuerySet[ReviewRound]) -> list[RoundFacts]:
    """The finished rounds with the content keys of their changed files (what a push changed)."""
    return [
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
    findings = _finding_facts(_finding_rows(nodes))
    if all(f.round == exclude_round for f in findings):
        return []  # nothing decided elsewhere: no round to read (a workspace's first review)
    decided = [d for d in decisions(findings, _round_facts(rounds)) if d.round != exclude_round]
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
