"""Actions on the parts of a review page: a finding (triage), a disagreement, a cohort read,
a file viewed, and the threads' messages. With htmx each answers with the part it changed."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from config.errors import errors_as_messages
from reviews.domain.wording import disagreement_flash
from reviews.models import (
    CohortProgress,
    ReviewNode,
    ReviewSpace,
    ThreadMessage,
)
from reviews.selectors import (
    disagreement_round,
    space_get_for_user,
)
from reviews.services import disagreements as disagreement_services
from reviews.services import nodes as node_services
from reviews.services import threads as thread_services
from reviews.services.viewed import file_viewed_mark
from reviews.web.forms import NodeActionForm
from reviews.web.presenters import review_context
from reviews.web.shared import posted_round
from workspaces.http import AuthenticatedHttpRequest, HtmxHttpRequest
from workspaces.models import Membership
from workspaces.permissions import require
from workspaces.rules import Perm, RuleError
from workspaces.views import member_view


@member_view
@require_POST
def node_action(
    request: HtmxHttpRequest, membership: Membership, space_id: int, node_id: int
) -> HttpResponse:
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    form = NodeActionForm(request.POST)
    action = request.POST.get("action", "")
    require(
        membership, Perm.TRIAGE_NODES, attempted=f"{action or 'change'} findings", request=request
    )
    node = get_object_or_404(
        ReviewNode.objects.select_related("stream", "space"), pk=node_id, space=space
    )
    if not form.is_valid():
        raise RuleError("Unknown action, or a reason longer than 2000 characters.")
    with errors_as_messages(request):
        node_services.node_act(
            node=node,
            action=form.cleaned_data["action"],
            user=request.user,
            reason=form.cleaned_data["reason"],
            request=request,
        )
    if request.htmx:
        context = review_context(membership, space, round_number=node.round.number, focus=node.pk)
        context["node"] = context["page"].node(node.pk)
        return _node_cards(request, context)
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


def _node_cards(request: HtmxHttpRequest, context: dict) -> HttpResponse:
    """The finding's one card (in the diff or in the list, wherever it asked from), then its
    line in the findings index out of band, so both show the finding's new state at once."""
    inline = str(request.htmx.target or "").startswith("diff-")
    card = {**context, "inline": inline, "index_oob": True}
    return HttpResponse(render_to_string("reviews/partials/node.html", card, request))


@member_view
@require_POST
def disagreement_decide(
    request: HttpRequest, membership: Membership, space_id: int, node_id: int
) -> HttpResponse:
    """A person settles a disagreement: one side's priority and type, or dismiss with a reason."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="decide disagreements", request=request)
    review_round = disagreement_round(space=space, key=node_id)
    with errors_as_messages(request):
        disagreement_services.disagreement_decide(
            review_round=review_round,
            key=str(node_id),
            decision=request.POST.get("decision", ""),
            user=request.user,
            reason=request.POST.get("reason", "")[:2000],
            request=request,
        )
        messages.success(request, disagreement_flash(request.POST.get("decision", "")))
    url = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
    newest = space.rounds.order_by("-number").values_list("number", flat=True).first()
    # Back to the round the person decided on, when it is an earlier one.
    pinned = f"?round={review_round.number}" if review_round.number != newest else ""
    return redirect(f"{url}{pinned}#disagreements")


@member_view
@require_POST
def cohort_read(
    request: AuthenticatedHttpRequest, membership: Membership, space_id: int, key: str
) -> HttpResponse:
    """Mark a cohort read (or unread) for this person; kept by the cohort's content key."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    if request.POST.get("read") == "0":
        CohortProgress.objects.filter(user=request.user, space=space, cohort_key=key).delete()
    else:
        CohortProgress.objects.get_or_create(user=request.user, space=space, cohort_key=key[:64])
    return redirect(
        f"{reverse('reviews:detail', args=[membership.workspace.slug, space.pk])}#cohort-{key[:12]}"
    )


@member_view
@require_POST
def file_viewed(request: HtmxHttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """Mark a changed file viewed (checkbox on) or not for this person. Any member may mark for
    themselves; an archived repository's review is read-only (the middleware refuses first)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    review_round = posted_round(request, space)
    if review_round is None:
        raise Http404("This review has no round.")
    path = request.POST.get("path", "")
    with errors_as_messages(request):
        file_viewed_mark(
            space=space,
            review_round=review_round,
            user=request.user,
            path=path,
            viewed=request.POST.get("viewed") == "1",
        )
    if request.htmx:
        context = review_context(membership, space, round_number=review_round.number)
        # The answer is the htmx target itself, not an out-of-band copy like the socket's.
        return render(request, "reviews/sections/files.html", {**context, "as_target": True})
    return redirect(
        f"{reverse('reviews:detail', args=[membership.workspace.slug, space.pk])}#review-files"
    )


def _thread_answer(
    request: HtmxHttpRequest, membership: Membership, thread: thread_services.Thread
) -> HttpResponse:
    """After a post or an edit: with htmx, the thread that asked (a finding has one card, in
    the diff or in the list, so one thread); without, back to the thread on the page."""
    space = thread.space
    node = thread.node
    round_number = node.round.number if node is not None else None
    if thread.stream is not None:
        round_number = thread.stream.round.number
    if not request.htmx:
        url = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
        newest = space.rounds.order_by("-number").values_list("number", flat=True).first()
        pinned = f"?round={round_number}" if round_number not in (None, newest) else ""
        return redirect(f"{url}{pinned}#thread-{thread.key.replace(':', '-')}")
    context = review_context(
        membership,
        space,
        round_number,
        focus=node.pk if node is not None else None,
    )
    inline = str(request.htmx.target or "").startswith("diff-")
    base = {**context, "key": thread.key, "thread_oob": False}
    html = render_to_string(
        "reviews/partials/thread.html", {**base, "pre": "diff-" if inline else ""}, request
    )
    return HttpResponse(html)


def _thread_space(
    membership: Membership, space_id: int, *, attempted: str, request: HttpRequest
) -> ReviewSpace:
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.DISCUSS, attempted=attempted, request=request)
    return space


@member_view
@require_POST
def thread_post(
    request: HtmxHttpRequest, membership: Membership, space_id: int, key: str
) -> HttpResponse:
    """A person's message in a thread (reviewer role and up; a viewer's post is refused and
    audited). Refusals (an empty or too long message) are shown like every refusal."""
    space = _thread_space(membership, space_id, attempted="post in threads", request=request)
    thread = thread_services.thread_get(space=space, key=key)
    with errors_as_messages(request):
        thread_services.message_post(
            thread=thread, user=request.user, body=request.POST.get("body", "")
        )
    return _thread_answer(request, membership, thread)


@member_view
@require_POST
def thread_edit(
    request: HtmxHttpRequest, membership: Membership, space_id: int, message_id: int
) -> HttpResponse:
    """The author corrects their message within the edit window; it shows as edited."""
    space = _thread_space(membership, space_id, attempted="edit thread messages", request=request)
    message = get_object_or_404(ThreadMessage, pk=message_id, space=space)
    thread = thread_services.thread_get(space=space, key=message.subject)
    with errors_as_messages(request):
        thread_services.message_edit(
            message=message, user=request.user, body=request.POST.get("body", "")
        )
    return _thread_answer(request, membership, thread)
