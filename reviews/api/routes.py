"""Reviews API: the same checks and services as the pages (docs/review-json.md#the-api)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status
from pydantic import Strict

from config.api_types import (
    INTEGRAL,
    MAX_INT,
    WEB_URL_PATTERN,
    BodyId,
    ErrorOut,
    Filter,
    Id,
    Input,
    JsonObject,
    Slug,
    Text,
    responses,
)
from config.safeurl import OptionalWebUrl
from guardrails.rules import CheckpointOutcome
from reviews.api.schemas import (
    AxisSubmittedOut,
    DisagreementDecidedOut,
    FlagClearedOut,
    NodeStatusOut,
    RequirementsRerunOut,
    ReviewJson,
    RoundQueueDownOut,
    RoundRefOut,
    RoundRerunOut,
    RoundSummaryOut,
    SarifLogIn,
    SarifLogOut,
    SarifUploadOut,
    TicketIssueFiledOut,
    TicketIssuePendingOut,
    TicketIssueRefusedOut,
    TicketOut,
    WorkspaceSpendOut,
)
from reviews.domain import consensus
from reviews.domain import types as t
from reviews.domain.space_status import SpaceStatus
from reviews.domain.tickets import ticket_state
from reviews.models import ReviewerTicket, ReviewNode, SarifUpload, Verdict
from reviews.reports.json_export import review_json, review_sarif, rounds_json, spend_json
from reviews.selectors import (
    disagreement_round,
    review_page,
    round_newest,
    space_get_for_user,
    spaces_for_list,
    workspace_spend,
)
from reviews.services import disagreements as disagreement_services
from reviews.services import nodes as node_services
from reviews.services import notes as note_services
from reviews.services.api_breaks import api_breaks_accept
from reviews.services.flags import space_flag_clear
from reviews.services.requests import review_request
from reviews.services.rounds import axis_submit, round_cancel, round_rerun, round_supply_request
from reviews.services.sarif import sarif_accept
from workspaces.models import Repository
from workspaces.permissions import membership_get, require
from workspaces.rules import Perm, ReadOnlyError, archived_message

router = Router(tags=["reviews"])

PullNumber = Annotated[int, Field(ge=1, le=MAX_INT), INTEGRAL]


class ReviewSummary(Schema):
    id: int
    pull_request: str
    title: str
    status: SpaceStatus
    round: int | None
    tier: t.Tier | None
    verdict: t.VerdictLevel | None
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
    tier: Annotated[t.Tier, Strict(False)] | None = None


class NodeAction(Input):
    reason: Text = Field(default="", max_length=2000)


class DisagreementDecisionIn(Input):
    decision: Literal["first", "second", "dismiss"]
    reason: Text = Field(default="", max_length=2000)


class FlagClearIn(Input):
    note: Text = Field(default="", max_length=2000)


class ApiBreaksAcceptIn(Input):
    reason: Text = Field(min_length=1, max_length=1000)


class ApiBreaksAcceptedOut(Schema):
    space: int
    round: int
    result: str  # the apiContract axis after the acceptance: warn
    accepted: list[str]  # where each accepted break is
    verdict: str | None


class RequestIn(Input):
    original_request: Text = Field(min_length=1, max_length=20000)


class TicketDismissIn(Input):
    reason: Text = Field(default="", max_length=2000)


class TicketIssueIn(Input):
    # Omitted: the reviewer's title, and its body with where the ticket came from.
    title: Text | None = Field(default=None, max_length=256)
    body: Text | None = Field(default=None, max_length=65536)


class AxisIn(Input):
    result: Annotated[t.AxisResult, Strict(False)]
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
        raise ReadOnlyError(archived_message(space.pull_request.repository))
    return membership, space


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
    response=responses({200: FlagClearedOut}, 400, 403, 404, 409, 413, 422),
)
def flag_clear(request, slug: Slug, space_id: Id, body: FlagClearIn):
    """A person has looked at a review flagged for a person: clear the flag (audited as
    `review.flag_cleared` with who cleared it). 409 when it is not flagged."""
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, "clear the flag for a person")
    space_flag_clear(space=space, actor=request.user, note=body.note, request=request)
    return {"space": space.pk, "flagged_for_human": False}


@router.post(
    "/{slug}/reviews/{space_id}/rounds/{number}/api-breaks/accept",
    response=responses({200: ApiBreaksAcceptedOut}, 400, 403, 404, 409, 413, 422),
)
def api_breaks_accept_api(request, slug: Slug, space_id: Id, number: Id, body: ApiBreaksAcceptIn):
    """A person (triage role, not an agent's token) accepts the API breaks the round's
    apiContract axis found, with a reason: audited as `api.break_accepted`, the breaks stay
    listed as accepted, the axis warns and the verdict is decided again. 409 when the round
    has no break or is not the newest."""

    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, "accept an API break")
    review_round = _round_of(space, number)
    row = api_breaks_accept(
        review_round=review_round, user=request.user, reason=body.reason, request=request
    )

    level = Verdict.objects.filter(round=review_round).values_list("level", flat=True).first()
    return {
        "space": space.pk,
        "round": review_round.number,
        "result": row.result,
        "accepted": row.details["accepted"]["breaks"],
        "verdict": level,
    }


@router.get(
    "/{slug}/reviews/{space_id}",
    response=responses({200: ReviewJson}, 404, 422),
    summary="One review, schema quorum.review/v1",
    by_alias=True,
)
def review_get(request, slug: Slug, space_id: Id, round: Id | None = None):
    """`round`: one round's findings and verdict (404 if the review has no such round);
    without it, the newest round, or the last finished one when the newest failed or was
    cancelled."""
    _, space = _space(request, slug, space_id)
    return review_json(review_page(space=space, round_number=round))


@router.post(
    "/{slug}/reviews",
    response=responses({202: RoundRefOut, 503: RoundQueueDownOut}, 400, 403, 404, 413, 422),
)
def review_start(request, slug: Slug, body: ReviewStart):
    """202 when queued. 503 when the task queue is down: the round exists (ids in the body)
    and starts by itself once the queue is back; asking again returns the same round."""
    membership = membership_get(user=request.user, slug=slug)
    require(membership, Perm.START_REVIEW, attempted="start reviews", request=request)
    repository = get_object_or_404(Repository, pk=body.repository, workspace=membership.workspace)
    # A queue that is down answers 503 with the round's ids (ReviewQueuedError.extra).
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
    return Status(
        202,
        {"space": review_round.space_id, "round": review_round.number, "state": review_round.state},
    )


@router.post(
    "/{slug}/reviews/{space_id}/nodes/{node_id}/{action}",
    response=responses({200: NodeStatusOut}, 400, 403, 404, 409, 413, 422),
)
def node_act(
    request,
    slug: Slug,
    space_id: Id,
    node_id: Id,
    action: consensus.Action,
    body: NodeAction,
):
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, f"{action} findings")
    node = get_object_or_404(
        ReviewNode.objects.select_related("stream", "space"), pk=node_id, space=space
    )
    node = node_services.node_act(
        node=node, action=action, user=request.user, reason=body.reason, request=request
    )
    return {"id": node.pk, "status": node.status}


@router.post(
    "/{slug}/reviews/{space_id}/disagreements/{node_id}/decide",
    response=responses({200: DisagreementDecidedOut}, 400, 403, 404, 409, 413, 422),
)
def disagreement_decide(
    request, slug: Slug, space_id: Id, node_id: Id, body: DisagreementDecisionIn
):
    """Settle the disagreement whose key (its location's first canonical node) is `node_id`:
    every node there takes the `first` or `second` side's priority and type and the other
    side's findings are folded into the kept one (`duplicate_of`), or the disputed findings are
    dismissed with the reason."""
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, "decide disagreements")
    review_round = disagreement_round(space=space, key=node_id)
    changed = disagreement_services.disagreement_decide(
        review_round=review_round,
        key=str(node_id),
        decision=body.decision,
        user=request.user,
        reason=body.reason,
        request=request,
    )
    return {
        "decision": body.decision,
        "nodes": [
            {
                "id": n.pk,
                "priority": n.priority,
                "type": n.type,
                "status": n.status,
                "duplicate_of": n.duplicate_of_id,
            }
            for n in changed
        ],
    }


@router.post(
    "/{slug}/reviews/{space_id}/requirements",
    response=responses({202: RequirementsRerunOut}, 400, 403, 404, 409, 413, 422, 503),
)
def supply_request(request, slug: Slug, space_id: Id, body: RequestIn):
    _, space = _space(request, slug, space_id, Perm.START_REVIEW, "supply the original request")
    review_round = round_newest(space=space)
    stream = round_supply_request(
        review_round=review_round,
        text=body.original_request,
        actor=request.user,
        request=request,
    )
    return Status(202, {"rerun": stream.name if stream else None})


@router.post(
    "/{slug}/reviews/{space_id}/axes/{axis}",
    response=responses({201: AxisSubmittedOut}, 400, 403, 404, 409, 413, 422),
)
def submit_axis(
    request,
    slug: Slug,
    space_id: Id,
    axis: Literal["visual", "performance", "apiContract"],
    body: AxisIn,
):
    _, space = _space(request, slug, space_id, Perm.START_REVIEW, "submit axis results")
    review_round = round_newest(space=space)
    row = axis_submit(
        review_round=review_round,
        axis=t.AxisName(axis),
        result=t.AxisResult(body.result),
        evidence_url=body.evidence_url,
        details=body.details,
        actor=request.user,
        request=request,
    )
    return Status(
        201,
        {"axis": row.axis, "result": row.result, "gated": row.gated, "round": review_round.number},
    )


def _ticket_out(ticket: ReviewerTicket) -> dict[str, Any]:

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
    response=responses({200: TicketOut}, 400, 403, 404, 409, 413, 422),
)
def ticket_dismiss(request, slug: Slug, space_id: Id, ticket_id: Id, body: TicketDismissIn):
    """Dismiss a ticket a reviewer proposed (`notes.tickets` in the review), with a reason."""
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, "dismiss reviewer tickets")
    ticket = get_object_or_404(ReviewerTicket, pk=ticket_id, round__space=space)
    ticket = note_services.ticket_dismiss(
        ticket=ticket, user=request.user, reason=body.reason, request=request
    )
    return _ticket_out(ticket)


@router.post(
    "/{slug}/reviews/{space_id}/tickets/{ticket_id}/issue",
    response=responses(
        {200: TicketIssueFiledOut, 202: TicketIssuePendingOut, 409: TicketIssueRefusedOut},
        400,
        403,
        404,
        413,
        422,
    ),
)
def ticket_issue(request, slug: Slug, space_id: Id, ticket_id: Id, body: TicketIssueIn):
    """Ask for a proposed ticket to become a GitHub issue (action class issueCreate, approved
    like a publish): 202 with the approval request while it waits, 200 once filed, 409 when the
    workspace's rule refuses it now, 400 for a local repository or a decided ticket."""
    _, space = _space(request, slug, space_id, Perm.REQUEST_PUBLISH, "create GitHub issues")
    ticket = get_object_or_404(ReviewerTicket, pk=ticket_id, round__space=space)
    result = note_services.ticket_issue_request(
        ticket=ticket,
        actor=request.user,
        title=body.title,
        body=body.body,
        http_request=request,
    )
    ticket = ReviewerTicket.objects.select_related("approval_request").get(pk=ticket.pk)
    if result.outcome is CheckpointOutcome.REFUSED:
        return Status(409, {"detail": result.reason, "ticket": _ticket_out(ticket)})
    if result.outcome is CheckpointOutcome.PENDING:
        return Status(
            202,
            {"detail": result.reason, "request": result.request.pk, "ticket": _ticket_out(ticket)},
        )
    return Status(
        200, {"detail": "executed", "result": result.result, "ticket": _ticket_out(ticket)}
    )


@router.get(
    "/{slug}/reviews/{space_id}/rounds",
    response=responses({200: list[RoundSummaryOut]}, 404, 422),
    summary="Every round of a review, oldest first",
)
def round_list(request, slug: Slug, space_id: Id):
    """Each round's number, state (and in words), head, tier, verdict, re-run/superseded links,
    times and delta summary: the review page's round switcher."""

    _, space = _space(request, slug, space_id)
    return rounds_json(review_page(space=space))


@router.get(
    "/{slug}/spend",
    response=responses({200: WorkspaceSpendOut}, 404, 422),
    summary="What the workspace's model calls cost, per day, month, reviewer and model",
)
def workspace_spend_get(request, slug: Slug):
    """Tokens (input, cached, output) and money where a price is set, over every review of
    the workspace; any member may read it."""

    membership = membership_get(user=request.user, slug=slug)
    require(membership, Perm.VIEW, attempted="see the workspace's spend", request=request)
    return spend_json(workspace_spend(membership.workspace_id), periods=True)


def _round_of(space, number: int):
    return get_object_or_404(space.rounds.all(), number=number)


@router.post(
    "/{slug}/reviews/{space_id}/rounds/{number}/rerun",
    response=responses({202: RoundRerunOut, 409: ErrorOut, 503: RoundQueueDownOut}, 403, 404, 422),
)
def round_rerun_api(request, slug: Slug, space_id: Id, number: Id):
    """Review a failed or cancelled round's head again as a new round (202, queued like a
    start). 409 when the round is not the newest or did not fail or get cancelled; 503 when the
    queue is down (the new round exists and starts once it is back)."""

    _, space = _space(request, slug, space_id, Perm.START_REVIEW, "re-run reviews")
    review_round = _round_of(space, number)
    new = round_rerun(review_round=review_round, actor=request.user, request=request)
    return Status(
        202,
        {"space": space.pk, "round": new.number, "state": new.state, "rerun_of": number},
    )


@router.post(
    "/{slug}/reviews/{space_id}/rounds/{number}/cancel",
    response=responses({200: RoundRefOut, 409: ErrorOut}, 403, 404, 422),
)
def round_cancel_api(request, slug: Slug, space_id: Id, number: Id, confirm: Filter = ""):
    """Cancel a queued or running round. Irreversible, so it asks for `?confirm=yes`: without
    it nothing changes and the answer (409) says so. 409 too when the round already ended."""

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
    review_round = round_cancel(review_round=review_round, actor=request.user, request=request)
    return {"space": space.pk, "round": review_round.number, "state": review_round.state}


@router.get(
    "/{slug}/reviews/{space_id}/sarif",
    response=responses({200: SarifLogOut}, 404, 422),
    summary="One round's findings as SARIF 2.1.0",
    by_alias=True,
)
def review_sarif_get(request, slug: Slug, space_id: Id, round: Id | None = None):
    """The round `review_get` shows (or `round`), as a SARIF 2.1.0 log for code scanning or any
    SARIF viewer: one run, tool Quorum, `partialFingerprints` from each finding's fingerprint,
    dismissed and resolved findings as suppressed results (docs/sarif.md)."""
    _, space = _space(request, slug, space_id)
    return review_sarif(review_page(space=space, round_number=round))


def _sarif_upload_out(request, slug: str, upload: SarifUpload) -> dict:
    review_round = upload.round
    return {
        "upload": upload.pk,
        "space": review_round.space_id,
        "round": review_round.number,
        "state": upload.state,
        "results": upload.results,
        "runs": upload.runs,
        "verdict": upload.verdict or None,
        "error": upload.error,
        "status_url": request.build_absolute_uri(
            f"/api/v1/workspaces/{slug}/reviews/{review_round.space_id}/rounds/"
            f"{review_round.number}/sarif/{upload.pk}"
        ),
    }


@router.post(
    "/{slug}/reviews/{space_id}/rounds/{number}/sarif",
    response=responses({202: SarifUploadOut}, 400, 403, 404, 409, 413, 422),
)
def sarif_upload(request, slug: Slug, space_id: Id, number: Id, body: SarifLogIn):
    """Upload a SARIF 2.1.0 log from CI for a finished round. The log is checked and stored
    here and recorded by a worker (202, `state` queued; poll `status_url`): each run becomes a
    reviewer stream named after its tool; results on lines the change adds become findings,
    merged with the others by the lead pass, and the verdict is decided again; results outside
    the change are counted. The same log twice adds nothing. 400 with `path` and
    `schema_error` for a document the SARIF schema refuses (nothing is stored); 409 while the
    round has not finished or once a newer round exists; 413 past the body cap or 5000
    results."""
    import json

    _, space = _space(request, slug, space_id, Perm.START_REVIEW, "upload SARIF")
    review_round = _round_of(space, number)
    upload = sarif_accept(
        review_round=review_round,
        document=json.loads(request.body),
        user=request.user,
        request=request,
    )
    return Status(202, _sarif_upload_out(request, slug, upload))


@router.get(
    "/{slug}/reviews/{space_id}/rounds/{number}/sarif/{upload_id}",
    response=responses({200: SarifUploadOut}, 404, 422),
)
def sarif_upload_get(request, slug: Slug, space_id: Id, number: Id, upload_id: Id):
    """One SARIF upload of a round: queued, done (with what each run became and the verdict
    after it) or failed (with why)."""
    _, space = _space(request, slug, space_id)
    review_round = _round_of(space, number)
    upload = get_object_or_404(SarifUpload, round=review_round, pk=upload_id)
    upload.round = review_round
    return _sarif_upload_out(request, slug, upload)
