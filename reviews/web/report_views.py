"""A review's exports: the markdown report (raw and as a page), the JSON and the SARIF."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from reviews.reports.json_export import review_json, review_sarif
from reviews.reports.markdown import report_markdown
from reviews.selectors import (
    review_page,
    space_get_for_user,
)
from reviews.web.shared import round_param
from workspaces.models import Membership
from workspaces.views import member_view


@member_view
def review_report_json(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """The review as JSON (schema quorum.review/v1, the same as the API and the CLI)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    response = JsonResponse(review_json(review_page(space=space)), json_dumps_params={"indent": 2})
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="quorum-review-{space.pk}.json"'
    return response


@member_view
def review_report_sarif(
    request: HttpRequest, membership: Membership, space_id: int
) -> HttpResponse:
    """The shown round's findings as SARIF 2.1.0 (the same as GET …/sarif and the CLI's
    `--format sarif`), for GitHub code scanning or any SARIF viewer."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    log = review_sarif(review_page(space=space, round_number=round_param(request)))
    response = JsonResponse(log, json_dumps_params={"indent": 2})
    response["Content-Type"] = "application/sarif+json"
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="quorum-review-{space.pk}.sarif"'
    return response


def _discussion_param(request: HttpRequest) -> bool:
    """`?discussion=1`: the report quotes every thread's messages, not only their count."""
    return request.GET.get("discussion", "") in ("1", "on", "true")


@member_view
def review_report(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    round_number = round_param(request)
    markdown = report_markdown(
        review_page(space=space, round_number=round_number),
        discussion=_discussion_param(request),
    )
    response = HttpResponse(markdown, content_type="text/markdown; charset=utf-8")
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="quorum-review-{space.pk}.md"'
    return response


@member_view
def review_report_page(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """The markdown report read as a page (the same text as report.md, rendered safely),
    with links to the raw file."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    round_number = round_param(request)
    discussion = _discussion_param(request)
    context = {
        "workspace": membership.workspace,
        "membership": membership,
        "space": space,
        "round_number": round_number,
        "discussion": discussion,
        "report": report_markdown(
            review_page(space=space, round_number=round_number), discussion=discussion
        ),
    }
    return render(request, "reviews/report.html", context)
