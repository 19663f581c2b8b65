"""Reads of review spaces as a whole: one space for a member, the round an action applies to,
and the reviews list annotated in one query. Apart from the page reads because the list,
the API and the round actions need them without loading a page."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.http import Http404

from config.application_errors import ErrorCode
from reviews.domain import types as t
from reviews.models import ReviewNode, ReviewRound, ReviewSpace
from workspaces.rules import RuleError

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


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
