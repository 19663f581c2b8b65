"""Actions on a review as a whole: its rounds (cancel, re-run, supply the request), its flag,
its API breaks, publishing it to GitHub and the reviewers' tickets."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from config.application_errors import ApplicationError
from config.errors import errors_as_messages
from reviews.domain.round_states import state_label
from reviews.models import (
    ReviewerTicket,
    ReviewRound,
    ReviewSpace,
)
from reviews.selectors import (
    round_newest,
    space_get_for_user,
)
from reviews.services import notes as note_services
from reviews.services.api_breaks import api_breaks_accept
from reviews.services.flags import space_flag_clear
from reviews.services.publish_plans import publish_refusal_for
from reviews.services.publishing import publish_request
from reviews.services.rounds import (
    ReviewQueuedError,
    round_cancel,
    round_rerun,
    round_supply_request,
)
from reviews.web.presenters import publish_preview_context
from reviews.web.shared import checkpoint_message, posted_round
from workspaces.confirm import confirmation_page, confirmed
from workspaces.http import HtmxHttpRequest
from workspaces.models import Membership
from workspaces.permissions import require
from workspaces.rules import Perm
from workspaces.views import member_view


@member_view
@require_POST
def flag_clear(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """A person has looked at a review flagged after rounds without approval (audited)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="clear the flag for a person", request=request)
    with errors_as_messages(request):
        space_flag_clear(
            space=space, actor=request.user, note=request.POST.get("note", ""), request=request
        )
        messages.success(request, "Flag cleared: you are recorded as the person who looked.")
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


@member_view
@require_POST
def api_breaks_accept_view(
    request: HttpRequest, membership: Membership, space_id: int, number: int
) -> HttpResponse:
    """A person accepts the API breaks of the newest round, with a reason (audited)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="accept an API break", request=request)
    review_round = get_object_or_404(space.rounds.all(), number=number)
    with errors_as_messages(request):
        api_breaks_accept(
            review_round=review_round,
            user=request.user,
            reason=request.POST.get("reason", ""),
            request=request,
        )
        messages.success(request, "Break accepted: the axis warns and the verdict followed.")
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


@member_view
@require_POST
def supply_request(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.START_REVIEW, attempted="supply the original request", request=request)
    with errors_as_messages(request):
        stream = round_supply_request(
            review_round=round_newest(space=space),
            text=request.POST.get("original_request", ""),
            actor=request.user,
            request=request,
        )
        messages.success(
            request,
            f"Thanks: the {stream.name} reviewer runs again with it." if stream else "Saved.",
        )
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


@member_view
@require_POST
def cancel_round(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """Cancel the running or queued round; a POST without confirm=yes changes nothing and
    asks again (works without JavaScript)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.START_REVIEW, attempted="cancel reviews", request=request)
    review_round = posted_round(request, space)
    here = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
    if review_round is None:
        return HttpResponse("This review has no round to cancel.", status=404)
    if not confirmed(request):
        finished = (
            space.rounds.filter(state=ReviewRound.State.FINISHED, number__lt=review_round.number)
            .order_by("-number")
            .first()
        )
        return confirmation_page(
            request,
            title=f"Cancel round {review_round.number} of {space.pull_request}?",
            consequences=[
                f"Round {review_round.number} ({state_label(review_round.state).lower()}) "
                "stops: its reviewers are not waited for and it gets no verdict.",
                f"The verdict and findings of round {finished.number} stay readable."
                if finished
                else "No earlier round has a verdict: the review shows none until a new round "
                "finishes.",
                "The review then says “Round cancelled”; Re-run reviews the same head again.",
            ],
            button=f"Cancel round {review_round.number}",
            cancel_url=here,
            keep="Keep it running",
            context={"workspace": membership.workspace, "membership": membership},
        )
    with errors_as_messages(request):
        round_cancel(review_round=review_round, actor=request.user, request=request)
        messages.success(request, f"Round {review_round.number} cancelled.")
    return redirect(here)


@member_view
@require_POST
def rerun_round(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """Review a failed or cancelled round's head again, as a new round."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.START_REVIEW, attempted="re-run reviews", request=request)
    review_round = posted_round(request, space)
    if review_round is None:
        return HttpResponse("This review has no round to re-run.", status=404)
    try:
        new = round_rerun(review_round=review_round, actor=request.user, request=request)
    except ReviewQueuedError as exc:
        # Not a refusal: the new round exists and starts once the queue is back.
        messages.warning(request, exc.message)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Round {review_round.number} is re-run as round {new.number} on the same head "
            f"({new.head_sha[:7]}).",
        )
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


@member_view
@require_http_methods(["GET", "POST"])
def publish(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """Preview the GitHub review, then ask the guardrails checkpoint to publish it
    (docs/domain-rules.md#publish-once-per-round)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    refusal = publish_refusal_for(space)
    if refusal is not None:
        messages.error(request, refusal)
        return redirect("reviews:detail", membership.workspace.slug, space.pk)
    if request.method == "POST":
        require(membership, Perm.REQUEST_PUBLISH, attempted="request publishing", request=request)
        with errors_as_messages(request):
            # The page publishes what the preview showed: every open finding, approving on a
            # Ship verdict (the API chooses both).
            result = publish_request(
                space=space,
                selection="all_open",
                approve_on_ship=True,
                actor=request.user,
                seen_digest=request.POST.get("plan_digest", ""),
                http_request=request,
                note=request.POST.get("note", "")[:2000],
            )
            checkpoint_message(
                request, result, asked="Publish request", done="Published to GitHub."
            )
            return redirect("reviews:detail", membership.workspace.slug, space.pk)
        return redirect("reviews:publish", membership.workspace.slug, space.pk)
    with errors_as_messages(request):
        return render(request, "reviews/publish.html", publish_preview_context(membership, space))
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


def _ticket_anchor(membership: Membership, space: ReviewSpace, ticket: ReviewerTicket) -> str:
    page = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
    return f"{page}#ticket-{ticket.pk}"


@member_view
@require_POST
def ticket_dismiss(
    request: HtmxHttpRequest, membership: Membership, space_id: int, ticket_id: int
) -> HttpResponse:
    """A person dismisses a reviewer's proposed ticket, with an optional reason (audited)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="dismiss reviewer tickets", request=request)
    ticket = get_object_or_404(ReviewerTicket, pk=ticket_id, round__space=space)
    with errors_as_messages(request):
        note_services.ticket_dismiss(
            ticket=ticket, user=request.user, reason=request.POST.get("reason", ""), request=request
        )
        messages.success(request, f"Ticket “{ticket.title}” dismissed.")
    return redirect(_ticket_anchor(membership, space, ticket))


@member_view
@require_POST
def ticket_issue(
    request: HttpRequest, membership: Membership, space_id: int, ticket_id: int
) -> HttpResponse:
    """Ask for a reviewer's ticket to become a GitHub issue, through the guardrails checkpoint
    (issueCreate, approved like a publish). The title and body are the ones on the form."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.REQUEST_PUBLISH, attempted="create GitHub issues", request=request)
    ticket = get_object_or_404(ReviewerTicket, pk=ticket_id, round__space=space)
    here = _ticket_anchor(membership, space, ticket)
    with errors_as_messages(request):
        result = note_services.ticket_issue_request(
            ticket=ticket,
            actor=request.user,
            title=request.POST.get("title", ticket.title),
            body=request.POST.get("body") if "body" in request.POST else None,
            http_request=request,
        )
        checkpoint_message(request, result, asked="Issue request", done="GitHub issue created.")
    return redirect(here)
