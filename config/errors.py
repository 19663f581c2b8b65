"""Pages' side of the one error hierarchy (reviews/domain/errors.py): what a person sees when a
service refuses. The API's side is one exception handler in config/api.py.

- A form post that goes back to a page either way wraps its service call in
  `errors_as_messages(request)`: the refusal becomes an error message on that page.
- Anything else that escapes a view reaches `ApplicationErrorMiddleware`: an htmx request gets
  a small fragment swapped into the page's error region (HX-Retarget/HX-Reswap, with the
  error's status), a plain request the refusal page with the error's status and a way back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme

from reviews.domain.errors import ApplicationError

# The region of base.html an htmx error fragment replaces.
ERROR_REGION = "#errors"


def _htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def error_fragment(message: str, status: int) -> HttpResponse:
    """The answer to an htmx request that was refused: the message, retargeted at the page's
    error region whatever element asked (base.html lets htmx swap 400 and 409 answers)."""
    response = HttpResponse(
        format_html('<p class="message message-error" role="alert">{}</p>', message),
        status=status,
    )
    response["HX-Retarget"] = ERROR_REGION
    response["HX-Reswap"] = "innerHTML"
    return response


def _back(request: HttpRequest) -> str | None:
    referer = request.headers.get("Referer", "")
    if referer and url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        parts = urlsplit(referer)
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return None


def error_response(request: HttpRequest, exc: ApplicationError) -> HttpResponse:
    if _htmx(request):
        return error_fragment(exc.message, exc.http_status)
    context = {"title": "That was not done", "message": exc.message, "back": _back(request)}
    html = render_to_string("workspaces/refused.html", context, request=request)
    return HttpResponse(html, status=exc.http_status)


class ApplicationErrorMiddleware:
    """Pages only: the API answers its own errors (config/api.py) before any middleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, ApplicationError):
            return error_response(request, exception)
        return None


@contextmanager
def errors_as_messages(request: HttpRequest) -> Iterator[None]:
    """For a post whose answer is a redirect back to a page, success or not: a refusal becomes
    that page's error message and the rest of the block is skipped. An htmx request is not
    redirected: its refusal goes on to the middleware's fragment."""
    try:
        yield
    except ApplicationError as exc:
        if _htmx(request):
            raise
        messages.error(request, exc.message)
