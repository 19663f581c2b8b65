"""Reviews API: the same checks and services as the pages (docs/review-json.md#the-api)."""

from __future__ import annotations

from typing import Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError

from config.api_types import (
    MAX_INT,
    WEB_URL_PATTERN,
    BodyId,
    Filter,
    Id,
    Input,
    JsonObject,
    Slug,
    Text,
    body_int,
    responses,
)
from config.safeurl import OptionalWebUrl
from reviews.domain import consensus
from reviews.domain import types as t
from reviews.export import review_json
from reviews.models import ReviewerTicket, ReviewNode
from reviews.selectors import review_page, space_get_for_user, spaces_for_list
from reviews.services import nodes as node_services
from reviews.services import notes as note_services
from reviews.services.flags import FlagError, space_flag_clear
from reviews.services.requests import ReviewQueuedError, ReviewRequestError, review_request
from reviews.services.rounds import RoundError, axis_submit, round_supply_request
from workspaces.middleware import archived_message
from workspaces.models import Repository
from workspaces.permissions import membership_get, require
from workspaces.rules import Perm, RuleError

router = Router(tags=["reviews"])

PullNumber = body_int(ge=1, le=MAX_INT)


class ReviewSummary(Schema):
    id: int
    pull_request: str
    title: str
    status: str
    round: int | None
    tier: str | None
    verdict: str | None
    confidence: float | None
    open_by_priority: dict[str, int]
    # Two rounds in a row ended without approval: a person should decide (until one clears it).
    flagged_for_human: bool
    flag_reason: str


class ReviewStart(Input):
    repository: BodyId
    number: PullNumber | None = None
    base: Text = Field(default="", max_length=255)
    head: Text = Field(default="", max_length=255)
    original_request: Text = Field(default="", max_length=20000)
    tier: Literal["light", "balanced", "thorough", "adaptive"] | None = None


class NodeAction(Input):
    reason: Text = Field(default="", max_length=2000)


class DisagreementDecisionIn(Input):
    decision: Literal["first", "second", "dismiss"]
    reason: Text = Field(default="", max_length=2000)


class FlagClearIn(Input):
    note: Text = Field(default="", max_length=2000)


class RequestIn(Input):
    original_request: Text = Field(min_length=1, max_length=20000)


class TicketDismissIn(Input):
    reason: Text = Field(default="", max_length=2000)


class TicketIssueIn(Input):
    # Omitted: the reviewer's title, and its body with where the ticket came from.
    title: Text | None = Field(default=None, max_length=256)
    body: Text | None = Field(default=None, max_length=65536)


class AxisIn(Input):
    result: Literal["pass", "warn", "fail", "partial", "unavailable"]
    # CI systems send it; it is rendered as a link, so only http(s) is accepted (422).
    evidence_url: OptionalWebUrl = Field(default="", max_length=200, pattern=WEB_URL_PATTERN)
    details: JsonObject = Field(default_factory=dict)


def _space(request, slug: str, space_id: int, perm: Perm = Perm.VIEW, attempted: str = ""):
    membership = membership_get(user=request.user, slug=slug)
    if perm is not Perm.VIEW:
        require(membership, perm, attempted=attempted, request=request)
    space = space_get_for_user(space_id=space_id, workspace_slug=slug)
    if perm is not Perm.VIEW and space.pull_request.repository.archived_at is not None:
        # Reviews of a disconnected repository are read-only (workspaces/middleware.py).
        raise HttpError(409, archived_message(space.pull_request.repository))
    return membership, space


def _errors(exc: Exception) -> RuleError:
    return RuleError(str(exc))


@router.get("/{slug}/reviews", response=responses({200: list[ReviewSummary]}, 404, 422))
def review_list(
    request,
    slug: Slug,
    status: Filter = "",
    verdict: Filter = "",
    repository: Id | None = None,
    flagged: bool = False,
):
    """`flagged=true`: only the reviews that need a person."""
    membership = membership_get(user=request.user, slug=slug)
    spaces = spaces_for_list(
        workspace_id=membership.workspace_id,
        status=status,
        verdict=verdict,
        repository_id=repository,
        flagged=flagged,
    )[:200]
    return [
        {
            "id": s.pk,
            "pull_request": str(s.pull_request),
            "title": s.pull_request.title,
            "status": s.status,
            "round": s.round_number,
            "tier": s.round_tier,
            "verdict": s.verdict_level,
            "confidence": s.verdict_confidence,
            "open_by_priority": {
                p.value: getattr(s, f"count_{p.value.lower()}") for p in t.Priority
            },
            "flagged_for_human": s.flagged_for_human,
            "flag_reason": s.flag_reason,
        }
        for s in spaces
    ]


@router.post(
    "/{slug}/reviews/{space_id}/flag/clear",
    response=responses({200: dict}, 400, 403, 404, 409, 413, 422),
)
def flag_clear(request, slug: Slug, space_id: Id, body: FlagClearIn):
    """A person has looked at a review flagged for a person: clear the flag (audited as
    `review.flag_cleared` with who cleared it). 409 when it is not flagged."""
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, "clear the flag for a person")
    try:
        space_flag_clear(space=space, actor=request.user, note=body.note, request=request)
    except FlagError as exc:
        raise HttpError(409, str(exc)) from exc
    return {"space": space.pk, "flagged_for_human": False}


@router.get(
    "/{slug}/reviews/{space_id}",
    response=responses({200: dict}, 404, 422),
    summary="One review, schema quorum.review/v1",
)
def review_get(request, slug: Slug, space_id: Id, round: Id | None = None):
    """`round`: one round's findings and verdict (404 if the review has no such round);
    without it, the newest round, or the last finished one when the newest failed or was
    cancelled."""
    _, space = _space(request, slug, space_id)
    return review_json(review_page(space=space, round_number=round))


@router.post(
    "/{slug}/reviews", response=responses({202: dict, 503: dict}, 400, 403, 404, 413, 422, 503)
)
def review_start(request, slug: Slug, body: ReviewStart):
    """202 when queued. 503 when the task queue is down: the round exists (ids in the body)
    and starts by itself once the queue is back; asking again returns the same round."""
    membership = membership_get(user=request.user, slug=slug)
    require(membership, Perm.START_REVIEW, attempted="start reviews", request=request)
    repository = get_object_or_404(Repository, pk=body.repository, workspace=membership.workspace)
    try:
        review_round = review_request(
            repository=repository,
            actor=request.user,
            number=body.number,
            base=body.base,
            head=body.head,
            original_request=body.original_request,
            tier=body.tier,
            request=request,
        )
    except ReviewRequestError as exc:
        raise _errors(exc) from exc
    except ReviewQueuedError as exc:
        queued = exc.review_round
        return Status(
            503,
            {
                "detail": str(exc),
                "space": queued.space_id,
                "round": queued.number,
                "state": queued.state,
            },
        )
    return Status(
        202,
        {"space": review_round.space_id, "round": review_round.number, "state": review_round.state},
    )


@router.post(
    "/{slug}/reviews/{space_id}/nodes/{node_id}/{action}",
    response=responses({200: dict}, 400, 403, 404, 409, 413, 422),
)
def node_act(
    request,
    slug: Slug,
    space_id: Id,
    node_id: Id,
    action: Literal["confirm", "resolve", "dismiss", "reopen"],
    body: NodeAction,
):
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, f"{action} findings")
    node = get_object_or_404(
        ReviewNode.objects.select_related("stream", "space"), pk=node_id, space=space
    )
    if node.duplicate_of_id is not None:
        raise RuleError(f"#{node.pk} is a duplicate: act on #{node.duplicate_of_id}.")
    act = {
        "confirm": node_services.node_confirm_by_person,
        "resolve": node_services.node_resolve,
        "dismiss": node_services.node_dismiss,
        "reopen": node_services.node_reopen,
    }[action]
    try:
        node = act(node=node, user=request.user, reason=body.reason, request=request)
    except consensus.ConsensusError as exc:
        raise _errors(exc) from exc
    return {"id": node.pk, "status": node.status}


@router.post(
    "/{slug}/reviews/{space_id}/disagreements/{node_id}/decide",
    response=responses({200: dict}, 400, 403, 404, 409, 413, 422),
)
def disagreement_decide(
    request, slug: Slug, space_id: Id, node_id: Id, body: DisagreementDecisionIn
):
    """Settle the disagreement whose key (its location's first canonical node) is `node_id`:
    every node there takes the `first` or `second` side's priority and type, or the disputed
    findings are dismissed with the reason."""
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, "decide disagreements")
    review_round = space.rounds.order_by("-number").first()
    if review_round is None:
        raise RuleError("This review has no round yet.")
    try:
        changed = node_services.disagreement_decide(
            review_round=review_round,
            key=str(node_id),
            decision=body.decision,
            user=request.user,
            reason=body.reason,
            request=request,
        )
    except (node_services.DisagreementError, consensus.ConsensusError) as exc:
        raise _errors(exc) from exc
    return {
        "decision": body.decision,
        "nodes": [
            {"id": n.pk, "priority": n.priority, "type": n.type, "status": n.status}
            for n in changed
        ],
    }


@router.post(
    "/{slug}/reviews/{space_id}/requirements",
    response=responses({202: dict}, 400, 403, 404, 409, 413, 422, 503),
)
def supply_request(request, slug: Slug, space_id: Id, body: RequestIn):
    _, space = _space(request, slug, space_id, Perm.START_REVIEW, "supply the original request")
    review_round = space.rounds.order_by("-number").first()
    if review_round is None:
        raise RuleError("This review has no round yet.")
    try:
        stream = round_supply_request(
            review_round=review_round,
            text=body.original_request,
            actor=request.user,
            request=request,
        )
    except RoundError as exc:
        raise _errors(exc) from exc
    return Status(202, {"rerun": stream.name if stream else None})


@router.post(
    "/{slug}/reviews/{space_id}/axes/{axis}",
    response=responses({201: dict}, 400, 403, 404, 409, 413, 422),
)
def submit_axis(
    request,
    slug: Slug,
    space_id: Id,
    axis: Literal["visual", "performance", "apiContract"],
    body: AxisIn,
):
    _, space = _space(request, slug, space_id, Perm.START_REVIEW, "submit axis results")
    review_round = space.rounds.order_by("-number").first()
    if review_round is None:
        raise RuleError("This review has no round yet.")
    try:
        row = axis_submit(
            review_round=review_round,
            axis=t.AxisName(axis),
            result=t.AxisResult(body.result),
            evidence_url=body.evidence_url,
            details=body.details,
            actor=request.user,
            request=request,
        )
    except RoundError as exc:
        raise _errors(exc) from exc
    return Status(
        201,
        {"axis": row.axis, "result": row.result, "gated": row.gated, "round": review_round.number},
    )


def _ticket_out(ticket: ReviewerTicket) -> dict:
    from reviews.domain.tickets import ticket_state

    request = ticket.approval_request
    state = ticket_state(
        ticket.status,
        request_status=request.status if request else None,
        request_id=request.pk if request else None,
    )
    return {
        "id": ticket.pk,
        "status": ticket.status,
        "status_label": state.label,
        "reason": ticket.reason,
        "issue_number": ticket.issue_number,
        "issue_url": ticket.issue_url or None,
        "approval_request": ticket.approval_request_id,
    }


@router.post(
    "/{slug}/reviews/{space_id}/tickets/{ticket_id}/dismiss",
    response=responses({200: dict}, 400, 403, 404, 409, 413, 422),
)
def ticket_dismiss(request, slug: Slug, space_id: Id, ticket_id: Id, body: TicketDismissIn):
    """Dismiss a ticket a reviewer proposed (`notes.tickets` in the review), with a reason."""
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, "dismiss reviewer tickets")
    ticket = get_object_or_404(ReviewerTicket, pk=ticket_id, round__space=space)
    try:
        ticket = note_services.ticket_dismiss(
            ticket=ticket, user=request.user, reason=body.reason, request=request
        )
    except note_services.TicketError as exc:
        raise _errors(exc) from exc
    return _ticket_out(ticket)


@router.post(
    "/{slug}/reviews/{space_id}/tickets/{ticket_id}/issue",
    response=responses({200: dict, 202: dict, 409: dict}, 400, 403, 404, 413, 422),
)
def ticket_issue(request, slug: Slug, space_id: Id, ticket_id: Id, body: TicketIssueIn):
    """Ask for a proposed ticket to become a GitHub issue (action class issueCreate, approved
    like a publish): 202 with the approval request while it waits, 200 once filed, 409 when the
    workspace's rule refuses it now, 400 for a local repository or a decided ticket."""
    _, space = _space(request, slug, space_id, Perm.REQUEST_PUBLISH, "create GitHub issues")
    ticket = get_object_or_404(ReviewerTicket, pk=ticket_id, round__space=space)
    try:
        result = note_services.ticket_issue_request(
            ticket=ticket,
            actor=request.user,
            title=body.title,
            body=body.body,
            http_request=request,
        )
    except note_services.TicketError as exc:
        raise _errors(exc) from exc
    ticket = ReviewerTicket.objects.select_related("approval_request").get(pk=ticket.pk)
    if result.outcome == "refused":
        return Status(409, {"detail": result.reason, "ticket": _ticket_out(ticket)})
    if result.outcome == "pending":
        return Status(
            202,
            {"detail": result.reason, "request": result.request.pk, "ticket": _ticket_out(ticket)},
        )
    return Status(
        200, {"detail": "executed", "result": result.result, "ticket": _ticket_out(ticket)}
    )


@router.get(
    "/{slug}/reviews/{space_id}/rounds",
    response=responses({200: list[dict]}, 404, 422),
    summary="Every round of a review, oldest first",
)
def round_list(request, slug: Slug, space_id: Id):
    """Each round's number, state (and in words), head, tier, verdict, re-run/superseded links,
    times and delta summary: the review page's round switcher."""
    from reviews.export import rounds_json

    _, space = _space(request, slug, space_id)
    return rounds_json(review_page(space=space))


def _round_of(space, number: int):
    return get_object_or_404(space.rounds.all(), number=number)


@router.post(
    "/{slug}/reviews/{space_id}/rounds/{number}/rerun",
    response=responses({202: dict, 409: dict, 503: dict}, 403, 404, 422),
)
def round_rerun_api(request, slug: Slug, space_id: Id, number: Id):
    """Review a failed or cancelled round's head again as a new round (202, queued like a
    start). 409 when the round is not the newest or did not fail or get cancelled; 503 when the
    queue is down (the new round exists and starts once it is back)."""
    from reviews.services.rounds import round_rerun

    _, space = _space(request, slug, space_id, Perm.START_REVIEW, "re-run reviews")
    review_round = _round_of(space, number)
    try:
        new = round_rerun(review_round=review_round, actor=request.user, request=request)
    except RoundError as exc:
        return Status(409, {"detail": str(exc)})
    except ReviewQueuedError as exc:
        new = exc.review_round
        return Status(
            503, {"detail": str(exc), "space": space.pk, "round": new.number, "state": new.state}
        )
    return Status(
        202,
        {"space": space.pk, "round": new.number, "state": new.state, "rerun_of": number},
    )


@router.post(
    "/{slug}/reviews/{space_id}/rounds/{number}/cancel",
    response=responses({200: dict, 409: dict}, 403, 404, 422),
)
def round_cancel_api(request, slug: Slug, space_id: Id, number: Id, confirm: Filter = ""):
    """Cancel a queued or running round. Irreversible, so it asks for `?confirm=yes`: without
    it nothing changes and the answer (409) says so. 409 too when the round already ended."""
    from reviews.services.rounds import round_cancel

    _, space = _space(request, slug, space_id, Perm.START_REVIEW, "cancel reviews")
    review_round = _round_of(space, number)
    if confirm != "yes":
        return Status(
            409,
            {
                "detail": f"Cancelling round {number} cannot be undone: send confirm=yes to "
                "cancel it. Nothing was changed."
            },
        )
    try:
        review_round = round_cancel(review_round=review_round, actor=request.user, request=request)
    except RoundError as exc:
        return Status(409, {"detail": str(exc)})
    return {"space": space.pk, "round": review_round.number, "state": review_round.state}
