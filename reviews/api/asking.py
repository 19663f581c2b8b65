"""API: ask a finding's reviewer, and decide what it proposes (the same services and role
checks as the page, reviews/web/threads_ask.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from config.api_types import Id, Input, Slug, Text, responses
from reviews.api.routes import _space
from reviews.domain import threads as thread_rules
from reviews.domain import types as t
from reviews.models import ThreadMessage
from reviews.services import asking, proposals, threads
from workspaces.rules import Perm

router = Router(tags=["reviews"])

ThreadKey = Annotated[
    str,
    Field(
        min_length=6,
        max_length=40,
        pattern=r"^(node|disagreement|note):[0-9]{1,11}(:[0-9]{1,11})?$",
    ),
]


class AskIn(Input):
    body: Text = Field(min_length=1, max_length=thread_rules.BODY_MAX)


class AskedOut(Schema):
    # The question as posted; the answer arrives in the thread (GET the thread, or the socket).
    question: int
    reviewer: str
    waiting: bool


class ProposalIn(Input):
    accept: bool


class ProposalNodeOut(Schema):
    id: int
    priority: t.Priority
    status: t.NodeStatus


class ProposalDecidedOut(Schema):
    message: int
    state: Literal["accepted", "rejected"]
    node: ProposalNodeOut


@router.post(
    "/{slug}/reviews/{space_id}/threads/{key}/ask",
    response=responses({202: AskedOut}, 400, 403, 404, 409, 413, 422),
)
def thread_ask(request, slug: Slug, space_id: Id, key: ThreadKey, body: AskIn):
    """Post `body` in a finding's thread (`node:<id>`) and ask the reviewer that wrote the
    finding. 202: the answer is posted in the thread by that reviewer once the model replies.
    400 when the reviewer cannot answer (an offline analyzer, no model configured); 409 when
    the repository is disconnected (its reviews are read-only)."""
    _, space = _space(request, slug, space_id, Perm.DISCUSS, "ask reviewers")
    thread = threads.thread_get(space=space, key=key)
    question = asking.ask_request(thread=thread, user=request.user, body=body.body)
    reviewer = thread.node.stream.name if thread.node is not None else ""
    return Status(202, {"question": question.pk, "reviewer": reviewer, "waiting": True})


@router.post(
    "/{slug}/reviews/{space_id}/messages/{message_id}/proposal",
    response=responses({200: ProposalDecidedOut}, 400, 403, 404, 409, 413, 422),
)
def proposal_decide(request, slug: Slug, space_id: Id, message_id: Id, body: ProposalIn):
    """Accept or reject what a reviewer proposed about its own finding (lower its priority,
    withdraw it, replace its fix). Accepted, the finding changes and the verdict follows. 409
    when it was already decided or no longer applies."""
    _, space = _space(request, slug, space_id, Perm.TRIAGE_NODES, "decide reviewers' proposals")
    message = get_object_or_404(ThreadMessage, pk=message_id, space=space)
    decided = proposals.proposal_decide(
        message=message, accept=body.accept, user=request.user, request=request
    )
    node = decided.node
    assert node is not None  # a proposal is always about a finding
    node.refresh_from_db(fields=["priority", "status"])
    return {
        "message": decided.pk,
        "state": decided.proposal_state,
        "node": {"id": node.pk, "priority": node.priority, "status": node.status},
    }
