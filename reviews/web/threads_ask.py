"""Asking a finding's reviewer from the page, and deciding what it proposes. Thin: the
services in reviews/services/asking.py and threads.py do the work and the checks of state;
roles are checked here (reviewer and up to ask, triage rights to decide)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from config.errors import errors_as_messages
from reviews.models import ThreadMessage
from reviews.selectors import space_get_for_user
from reviews.services import asking, proposals, threads
from workspaces.http import HtmxHttpRequest
from workspaces.models import Membership
from workspaces.permissions import require
from workspaces.rules import Perm
from workspaces.views import member_view


def _back(membership: Membership, space_id: int, node_id: int | None) -> HttpResponse:
    url = reverse("reviews:detail", args=[membership.workspace.slug, space_id])
    return redirect(f"{url}#node-{node_id}" if node_id else url)


@member_view
@require_POST
def thread_ask(
    request: HtmxHttpRequest, membership: Membership, space_id: int, key: str
) -> HttpResponse:
    """Post the question in the finding's thread and put it to the reviewer that wrote the
    finding; its answer arrives in the thread live, the page shows it is waiting till then."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.DISCUSS, attempted="ask reviewers", request=request)
    thread = threads.thread_get(space=space, key=key)
    with errors_as_messages(request):
        asking.ask_request(thread=thread, user=request.user, body=request.POST.get("body", ""))
    node = thread.node
    if request.htmx and node is not None:
        context = {"node": node, "membership": membership, "workspace": membership.workspace}
        return HttpResponse(render_to_string("reviews/partials/thread_ask.html", context, request))
    return _back(membership, space.pk, node.pk if node else None)


@member_view
@require_POST
def proposal_decide(
    request: HtmxHttpRequest, membership: Membership, space_id: int, message_id: int
) -> HttpResponse:
    """Accept or reject what a reviewer proposed about its finding."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="decide reviewers' proposals", request=request)
    message = get_object_or_404(ThreadMessage, pk=message_id, space=space)
    decision = request.POST.get("decision", "")
    with errors_as_messages(request):
        if decision not in ("accept", "reject"):
            raise threads.ThreadRefused("Accept or reject the proposal.")
        message = proposals.proposal_decide(
            message=message,
            accept=decision == "accept",
            user=request.user,
            request=request,
        )
    if request.htmx:
        context = {"message": message, "membership": membership, "workspace": membership.workspace}
        return HttpResponse(
            render_to_string("reviews/partials/thread_proposal.html", context, request)
        )
    return _back(membership, space.pk, message.node_id)
