"""The review actions that go through the guardrails, registered at start-up.

Guardrails knows nothing of reviews: reviews/apps.py calls `approval_actions_register` from
its ready(), which registers the action classes that act on a review (publish it, file a
reviewer's ticket as an issue, answer a question on GitHub, post the check run), their
payloads, and what the review's pages do when one of their requests changes.
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.urls import reverse
from pydantic import BaseModel, ConfigDict, Field

from guardrails.actions import ActionClass, ActionRefused, register
from guardrails.events import on_live_change, on_status_moved
from guardrails.models import ApprovalRequest
from reviews.live.events import space_send
from reviews.models import ReviewerTicket, ReviewRound, ReviewSpace
from reviews.services.check_runs import check_run_sync
from reviews.services.github import github_client
from reviews.services.github_replies import answer_execute, answer_head, answer_scope
from reviews.services.notes import ticket_issue_execute, ticket_issue_head, ticket_issue_scope
from reviews.services.publishing import publish_lookup, publish_review, publish_settled
from reviews.services.spaces import space_status_refresh
from reviews.sources.publish_plan import document_digest
from workspaces.models import Workspace


class PlanComment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    line: int
    side: str
    body: str
    start_line: int | None = None
    start_side: str | None = None


class PlanDocument(BaseModel):
    """What GitHub would receive; its digest is what the approval binds."""

    model_config = ConfigDict(extra="forbid")

    event: str
    body: str
    comments: list[PlanComment]


class PrPublishPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    space: int
    round: int
    head_sha: str = Field(min_length=7, max_length=40)
    github_head: str = Field(min_length=7, max_length=40)
    selection: str = Field(pattern="^(all_open|consensus)$")
    event: str = Field(pattern="^(APPROVE|REQUEST_CHANGES|COMMENT)$")
    approve_on_ship: bool
    plan_digest: str = Field(pattern="^[0-9a-f]{64}$")
    plan: PlanDocument


class IssueCreatePayload(BaseModel):
    """A reviewer's ticket filed as a GitHub issue, exactly this title and body, in exactly this
    repository. `head_sha` binds the ticket and the repository (reviews/services/notes.py)."""

    model_config = ConfigDict(extra="forbid")

    ticket: int
    space: int
    repository: str = Field(pattern=r"^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$")
    title: str = Field(min_length=1, max_length=256)
    body: str = Field(max_length=65_536)
    head_sha: str = Field(pattern="^[0-9a-f]{40}$")


class ThreadAnswerPayload(BaseModel):
    """A reviewer's answer to a question asked on GitHub, posted as exactly this body: a reply
    in the conversation of review comment `reply_to`, or (None) a comment on pull request
    `number`. `head_sha` binds the answer, the question and where it goes
    (reviews/services/github_replies.py)."""

    model_config = ConfigDict(extra="forbid")

    space: int
    answer: int
    question: int
    repository: str = Field(pattern=r"^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$")
    number: int = Field(ge=1)
    reply_to: int | None = Field(default=None, ge=1)
    body: str = Field(min_length=1, max_length=65_536)
    head_sha: str = Field(pattern="^[0-9a-f]{40}$")


class CheckRunPayload(BaseModel):
    """The `Quorum` check run (or commit status) of one round, as the round stands now."""

    model_config = ConfigDict(extra="forbid")

    space: int
    round: int
    head_sha: str = Field(pattern="^[0-9a-f]{40}$")


def _space(payload: dict[str, Any]):
    return ReviewSpace.objects.select_related("pull_request__repository").get(pk=payload["space"])


def publish_execute(
    payload: dict[str, Any], requester: Any, approval: ApprovalRequest | None
) -> dict[str, Any]:
    """Executor of an approved (or allowed) prPublish: post exactly the approved plan."""
    # The stored plan must still be the one its digest names, and publish_review recomputes the
    # plan against GitHub and refuses unless it has that same digest and the same PR head.
    if document_digest(payload["plan"]) != payload["plan_digest"]:
        raise ActionRefused("The stored publish plan does not match its digest.")
    space = _space(payload)
    latest = space.rounds.order_by("-number").values_list("number", flat=True).first()
    if latest != payload["round"]:
        raise ActionRefused(
            f"Round {payload['round']} was approved but round {latest} is now current: "
            "request publishing again."
        )
    record = publish_review(
        space=space,
        selection=payload["selection"],
        approve_on_ship=payload["approve_on_ship"],
        actor=requester,
        expected_digest=payload["plan_digest"],
        expected_head=payload["github_head"],
        approval_request=approval,
    )
    if record.state != record.State.POSTED:
        raise RuntimeError(record.error or f"publishing ended {record.state}")
    return {
        "github_review_id": record.github_review_id,
        "url": record.html_url,
        "path": record.path,
        "round": payload["round"],
    }


def _pr_head(payload: dict[str, Any]) -> str:
    """The PR's head as GitHub reports it now (not as our last webhook said)."""
    space = _space(payload)
    pr = space.pull_request
    owner, name = pr.repository.full_name.split("/", 1)
    with github_client() as client:
        return str((client.get_pull(owner, name, pr.number).get("head") or {}).get("sha") or "")


def _space_scope(payload: dict[str, Any]) -> tuple[int | None, str, str]:
    """(workspace id, target type, target id) the payload acts on."""
    workspace_id = (
        ReviewSpace.objects.filter(pk=payload["space"])
        .values_list("workspace_id", flat=True)
        .first()
    )
    return workspace_id, "reviewspace", str(payload["space"])


def check_run_execute(
    payload: dict[str, Any], requester: Any, approval: ApprovalRequest | None
) -> dict[str, Any]:
    """Executor of a checkRun: the round's check run (or status) as the round stands now."""
    return {"posted": check_run_sync(round_id=payload["round"])}


def _check_run_head(payload: dict[str, Any]) -> str:
    return (
        ReviewRound.objects.filter(pk=payload["round"]).values_list("head_sha", flat=True).first()
        or ""
    )


def _check_run_lookup(payload: dict[str, Any], request_id: int) -> None:
    # It reports the round's state and is posted again on the next update: a lost one fails.
    return None


def _review_pages(workspace: Workspace, requests: list[ApprovalRequest]) -> dict[int, str]:
    return {
        r.pk: reverse("reviews:detail", args=[workspace.slug, int(r.target_id)])
        for r in requests
        if r.target_type == "reviewspace" and r.target_id.isdigit()
    }


def _ticket_pages(workspace: Workspace, requests: list[ApprovalRequest]) -> dict[int, str]:
    """The ticket on its review's page: one query for all of them."""
    asked = [r for r in requests if r.target_type == "reviewerticket" and r.target_id.isdigit()]
    ticket_spaces = dict(
        ReviewerTicket.objects.filter(
            pk__in={int(r.target_id) for r in asked}, round__space__workspace=workspace
        )
        .values_list("pk", "round__space_id")
        .iterator()
    )
    return {
        r.pk: reverse("reviews:detail", args=[workspace.slug, ticket_spaces[int(r.target_id)]])
        + f"#ticket-{r.target_id}"
        for r in asked
        if int(r.target_id) in ticket_spaces
    }


def _answer_pages(workspace: Workspace, requests: list[ApprovalRequest]) -> dict[int, str]:
    """An answer to post on GitHub is about its review: the payload names the space."""
    return {
        r.pk: reverse("reviews:detail", args=[workspace.slug, int(r.payload["space"])])
        + f"#message-{r.target_id}"
        for r in requests
        if isinstance(r.payload.get("space"), int)
    }


ACTION_CLASSES = (
    ActionClass(
        name="prPublish",
        mutating=True,
        payload=PrPublishPayload,
        execute=publish_execute,
        current_head=_pr_head,
        scope=_space_scope,
        description="Publish a review to GitHub",
        writes_to_github=True,
        lookup=publish_lookup,
        settled=publish_settled,
        subject_pages=_review_pages,
    ),
    # Same approval rules as publishing: a second person, connected, decides.
    ActionClass(
        name="issueCreate",
        mutating=True,
        payload=IssueCreatePayload,
        execute=ticket_issue_execute,
        current_head=ticket_issue_head,
        scope=ticket_issue_scope,
        description="Create a GitHub issue from a reviewer's ticket",
        writes_to_github=True,
        subject_pages=_ticket_pages,
    ),
    # A reviewer's answer to a question asked on GitHub (`@quorum`): posted like a publish.
    # The workspace may allow it without approval (then the app posts it when the reviewer
    # answers). It can wait in the inbox: the person who asked is on GitHub, not here.
    ActionClass(
        name="threadAnswer",
        mutating=True,
        payload=ThreadAnswerPayload,
        execute=answer_execute,
        current_head=answer_head,
        scope=answer_scope,
        description="Post a reviewer's answer to a question asked on GitHub",
        writes_to_github=True,
        needs_presence=False,
        subject_pages=_answer_pages,
    ),
    # Posted by the app on every round's head commit: it reports the verdict and posts nothing
    # on the pull request, so it is not behind the publish approval. A workspace can switch it
    # off (deny); nobody is there to approve each update of a running round.
    ActionClass(
        name="checkRun",
        mutating=True,
        payload=CheckRunPayload,
        execute=check_run_execute,
        current_head=_check_run_head,
        scope=_space_scope,
        description="Post the Quorum check run (commit status) of each round to GitHub",
        writes_to_github=True,
        default_policy="allow",
        policies=("allow", "deny"),
        lookup=_check_run_lookup,
        subject_pages=_review_pages,
    ),
)


def _status_moved(request: ApprovalRequest) -> None:
    """A publish asked for, decided or executed changes what the review's status says."""
    if request.target_type == "reviewspace":
        # A review deleted for good with its repository has no status left to tell.
        with contextlib.suppress(ReviewSpace.DoesNotExist):
            space_status_refresh(space=int(request.target_id))


def _review_page_live(request: ApprovalRequest, kind: str) -> None:
    """The review's own page goes through reviews.live.events, which versions its live state."""
    if request.target_type == "reviewspace":
        space_send(int(request.target_id), "review.published", request=request.pk, kind=kind)
    if request.target_type == "reviewerticket":
        # An issue request moved: the ticket on its review page says where it is now.
        space_id = (
            ReviewerTicket.objects.filter(pk=int(request.target_id))
            .values_list("round__space_id", flat=True)
            .first()
        )
        if space_id is not None:
            space_send(space_id, "review.ticket", request=request.pk, kind=kind)


def approval_actions_register() -> None:
    """Called once the apps are ready (reviews/apps.py)."""
    for spec in ACTION_CLASSES:
        register(spec)
    on_status_moved(_status_moved)
    on_live_change(_review_page_live)
