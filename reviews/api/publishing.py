"""Publishing a review to GitHub through the API: the publish request of a review space.

The route asks the guardrails checkpoint (through reviews/services/publishing.py) and answers
with the approval request it made, in the guardrails API's own shape. It was served by the
guardrails router, and keeps that router's tag and operation id, so the API's contract is
unchanged; guardrails itself knows nothing of reviews.
"""

from __future__ import annotations

from typing import Literal

from ninja import Router, Schema, Status

from config.api_types import ErrorOut, Id, Input, Slug, responses
from guardrails import rules
from guardrails.api import ApprovalOut, approval_out
from reviews.selectors import space_get_for_user
from reviews.services import publishing
from reviews.sources.publish_plan import Selection
from workspaces.permissions import membership_get, require
from workspaces.rules import Perm

router = Router(tags=["guardrails"])


class PublishIn(Input):
    # The API publishes only peer-confirmed findings and never approves unless asked.
    selection: Selection = "consensus"
    approve_on_ship: bool = False


class PublishedResultOut(Schema):
    github_review_id: int | None
    url: str
    path: str
    round: int


class PublishExecutedOut(Schema):
    detail: Literal["executed"]
    result: PublishedResultOut


class PublishPendingOut(Schema):
    detail: str
    request: ApprovalOut


@router.post(
    "/{slug}/reviews/{space_id}/publish-requests",
    response=responses(
        {200: PublishExecutedOut, 202: PublishPendingOut, 409: ErrorOut},
        400,
        403,
        404,
        413,
        422,
        503,
    ),
    # The id it had when the guardrails router served it: clients generated from the schema
    # keep their method name.
    operation_id="guardrails_api_publish_request",
)
def publish_request(request, slug: Slug, space_id: Id, body: PublishIn):
    membership = membership_get(user=request.user, slug=slug)
    require(membership, Perm.REQUEST_PUBLISH, attempted="request publishing", request=request)
    space = space_get_for_user(space_id=space_id, workspace_slug=slug)
    # An archived repository (409), a round already on GitHub (409: each round is posted once,
    # whatever the selection) or nothing to publish (400) is refused by the service.
    result = publishing.publish_request(
        space=space,
        selection=body.selection,
        approve_on_ship=body.approve_on_ship,
        actor=request.user,
        http_request=request,
    )
    if result.outcome is rules.CheckpointOutcome.REFUSED:
        return Status(409, {"detail": result.reason})
    if result.outcome is rules.CheckpointOutcome.PENDING:
        return Status(202, {"detail": result.reason, "request": approval_out(result.request)})
    return Status(200, {"detail": "executed", "result": result.result})
