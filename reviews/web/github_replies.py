"""A person asks for a reviewer's answer to a GitHub question to be posted on GitHub."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from config.errors import errors_as_messages
from reviews.models import ThreadMessage
from reviews.selectors import space_get_for_user
from reviews.services.github_replies import answer_publish, question_of
from reviews.web.shared import checkpoint_message
from workspaces.models import Membership
from workspaces.permissions import require
from workspaces.rules import Perm
from workspaces.views import member_view


@member_view
@require_POST
def answer_post(
    request: HttpRequest, membership: Membership, space_id: int, message_id: int
) -> HttpResponse:
    """Ask (reviewer and up, like a publish) for the answer to go to GitHub, through the
    guardrails checkpoint (`threadAnswer`); without JavaScript the page comes back with what
    the checkpoint did."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.REQUEST_PUBLISH, attempted="post answers on GitHub", request=request)
    answer = get_object_or_404(ThreadMessage, pk=message_id, space=space)
    page = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
    with errors_as_messages(request):
        result = answer_publish(
            answer=answer,
            question=question_of(answer),
            requester=request.user,
            http_request=request,
        )
        checkpoint_message(
            request, result, asked="Posting the answer", done="Answer posted on GitHub."
        )
    return redirect(f"{page}#message-{answer.pk}")
