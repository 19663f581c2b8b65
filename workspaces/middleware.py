"""Reviews of a disconnected (archived) repository are read-only, whatever the action.

One check in front of every review write, so actions added later are covered too: a request
that would change a review (any method but GET/HEAD/OPTIONS on a URL naming a review space)
is refused with 409 and the reason. The API checks again in its own route helper, because a
bearer token is only read inside the API view.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse

from config.errors import error_fragment
from workspaces.http import HtmxHttpRequest
from workspaces.rules import archived_message
from workspaces.selectors import archived_space_repository

# A person's own reading progress changes nothing in the review.
PERSONAL_ROUTES = frozenset({"cohort_read"})


class ArchivedReviewsReadOnly:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HtmxHttpRequest, view_func, view_args, view_kwargs):
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return None
        if "space_id" not in view_kwargs or "slug" not in view_kwargs:
            return None
        match = request.resolver_match
        if match is not None and match.url_name in PERSONAL_ROUTES:
            return None
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None  # token callers: the API route helper checks
        repository = archived_space_repository(
            user=user, slug=view_kwargs["slug"], space_id=view_kwargs["space_id"]
        )
        if repository is None:
            return None
        message = archived_message(repository)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": message}, status=409)
        if request.htmx:
            return error_fragment(message, 409)
        back = reverse("reviews:detail", args=[view_kwargs["slug"], int(view_kwargs["space_id"])])
        context = {"title": "This repository is archived", "message": message, "back": back}
        html = render_to_string("workspaces/refused.html", context, request=request)
        return HttpResponse(html, status=409)
