"""The review pages people read: the reviews list (and starting a review), a review, and its
fragments loaded on demand (a finding group's next page, a cohort's diff previews)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from config.middleware import own_write_ms
from reviews.domain import types as t
from reviews.domain.finding_groups import PageRequestError, parse_page_request
from reviews.domain.space_status import (
    LADDER,
)
from reviews.live import version as live_version
from reviews.live.events import SECTIONS
from reviews.models import (
    ReviewSpace,
)
from reviews.selectors import (
    space_get_for_user,
    spaces_for_list,
)
from reviews.services.requests import ReviewRequestError, review_request
from reviews.services.rounds import ReviewQueuedError
from reviews.web.forms import NewReviewForm
from reviews.web.presenters import review_context
from reviews.web.section_renders import page_sections
from reviews.web.shared import round_param, space_or_404
from workspaces.http import HtmxHttpRequest
from workspaces.models import Membership
from workspaces.permissions import allows, require
from workspaces.rules import Perm, RuleError
from workspaces.tombstones import tombstone_or_404
from workspaces.views import member_view


@member_view
@require_http_methods(["GET", "POST"])
def review_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    ws = membership.workspace
    form = NewReviewForm(workspace=ws)
    status = 200
    if request.method == "POST":
        require(membership, Perm.START_REVIEW, attempted="start reviews", request=request)
        form = NewReviewForm(request.POST, workspace=ws)
        status = 400
        if form.is_valid():
            try:
                review_round = review_request(
                    actor=request.user, request=request, **form.cleaned_data
                )
            except ReviewRequestError as exc:
                form.add_error(None, str(exc))
            except ReviewQueuedError as exc:
                # The round exists and starts by itself later: say so, with the status that
                # tells a script to try again, and keep the page usable.
                form.add_error(None, str(exc))
                status = 503
            else:
                messages.success(
                    request, "Review started: findings appear here as reviewers report them."
                )
                return redirect("reviews:detail", ws.slug, review_round.space_id)
    filters = {
        "status": request.GET.get("status", ""),
        "verdict": request.GET.get("verdict", ""),
        "repository": request.GET.get("repository", ""),
        "flagged": "1" if request.GET.get("flagged") == "1" else "",
    }
    spaces = spaces_for_list(
        workspace_id=ws.pk,
        status=filters["status"] if filters["status"] in ReviewSpace.Status.values else "",
        verdict=filters["verdict"]
        if filters["verdict"] in t.VerdictLevel.__members__.values()
        else "",
        repository_id=int(filters["repository"]) if filters["repository"].isdigit() else None,
        flagged=bool(filters["flagged"]),
    )
    page = Paginator(spaces, 25).get_page(request.GET.get("page"))
    context = {
        "workspace": ws,
        "membership": membership,
        "page": page,
        "filters": filters,
        "statuses": [(s.value, s.label) for s in LADDER],
        "verdicts": [v.value for v in t.VerdictLevel],
        "repositories": ws.repositories.all(),
        "form": form,
        "can_start": allows(membership, Perm.START_REVIEW),
    }
    return render(request, "reviews/list.html", context, status=status)


@member_view
def review_detail(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    try:
        space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    except Http404:  # deleted for good: say what it was
        return tombstone_or_404(request, membership, kind="reviewspace", object_id=space_id)
    round_number = round_param(request)
    # Read before the page's data: a change landing meanwhile counts as unseen, never as seen.
    version = live_version.page_token(space.pk)
    # The sections, as every viewer of this kind saw them at this version (cached per version),
    # or at a version of the last second: then the page says so, and its socket catches up.
    sections, version = page_sections(
        membership,
        space,
        round_number,
        version,
        SECTIONS,
        csrf_token=get_token(request),
        wrote_ms=own_write_ms(request),
    )
    context = {
        "workspace": membership.workspace,
        "membership": membership,
        "space": space,
        "pinned_round": round_number,
        "sections": sections,
        "live_version": version,
    }
    return render(request, "reviews/detail.html", context)


@member_view
@require_GET
def findings_more(request: HtmxHttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """The next page of one finding group (`?group=P1&page=2`, `&round=N` on a pinned round):
    its cards and the link to the page after. htmx appends them to the group; without
    JavaScript the link opens them as a page of their own. A malformed group or page is a 400,
    a page past the group's end a 404."""
    space = space_or_404(membership, space_id)
    round_number = round_param(request)
    try:
        group, number = parse_page_request(
            request.GET.get("group", ""), request.GET.get("page", "")
        )
    except PageRequestError as exc:
        raise RuleError(str(exc)) from None
    context = review_context(membership, space, round_number, group=group, page_number=number)
    shown = context["finding_groups"]
    if not shown or not shown[0].window.in_range:  # a group the round's tier has not, or past it
        raise Http404("This review has no such page of findings.")
    context["group"] = shown[0]
    context["fragment"] = bool(request.htmx)
    if not request.htmx:  # a page of its own shows no diff: every finding's card is here
        context["inline_node_ids"] = set()
    template = (
        "reviews/partials/finding_group_page.html" if request.htmx else "reviews/findings_page.html"
    )
    return render(request, template, context)


@member_view
@require_GET
def cohort_previews(
    request: HtmxHttpRequest, membership: Membership, space_id: int, key: str
) -> HttpResponse:
    """A cohort's diff previews, loaded when the person opens a cohort the page did not render
    them for (or, without JavaScript, as a page of their own)."""
    space = space_or_404(membership, space_id)
    round_number = round_param(request)
    context = review_context(membership, space, round_number, cohort_key=key[:64])
    cohort = next((c for c in context["cohorts"] if c.key == key), None)
    if cohort is None:
        raise Http404("This review has no such cohort.")
    context["cohort"] = cohort
    # Opened from the review page, the findings of this cohort already have their card in the
    # list (only the first cohorts' previews hold cards): the diff links to it instead.
    context["cards_in_list"] = bool(request.htmx)
    template = (
        "reviews/partials/cohort_previews.html" if request.htmx else "reviews/cohort_page.html"
    )
    return render(request, template, context)
