"""Pages' side of the one error hierarchy (config/application_errors.py): what a person sees when a
service refuses. The API's side is one exception handler in config/api.py.

- A form post that goes back to a page either way wraps its service call in
  `errors_as_messages(request)`: the refusal becomes an error message on that page.
- Anything else that escapes a view reaches `ApplicationErrorMiddleware`: an htmx request gets
  a small fragment swapped into the page's error region (HX-Retarget/HX-Reswap, with the
  error's status), a plain request the refusal page with the error's status and a way back.
  A 403 or 404 raised for an htmx request gets a fragment too, never Django's error page.
- A crash is answered by `server_error` (handler500): a sentence with the request id
  (config/middleware.py) that is also in the logged traceback.

static/js/htmx_errors.js shows what htmx does not swap (other statuses, a network failure)
in the same region, and never swaps a whole page into a fragment.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.loader import get_template, render_to_string
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme

from config.application_errors import ApplicationError
from config.middleware import request_id_of

# The region of base.html an htmx error fragment replaces. "global": found from the document,
# also when a live update detached the element that sent the request.
ERROR_REGION = "global #errors"


def _htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


# What a person reads when the answer has no message of its own. The client keeps the same
# sentences (static/js/htmx_errors.js) for answers that never reach Django (a proxy's 502).
STATUS_SENTENCES = {
    400: "That request was not accepted. Reload the page and try again.",
    401: "You are signed out. Sign in and try again.",
    403: "You may not do that here.",
    404: "That is not here any more: it may have been removed. Reload the page.",
    405: "That action is not available here. Reload the page.",
    409: "That changed in the meantime. Reload the page and try again.",
    413: "That is too large to send.",
    429: "Too many requests in a short time. Wait a moment and try again.",
}
SERVER_ERROR = "Something went wrong on our side (request {id}). It has been logged."
CSRF_FAILURE = "Your session changed since this page was loaded. Reload the page and try again."


def status_sentence(status: int, request_id: str) -> str:
    if status >= 500:
        return SERVER_ERROR.format(id=request_id)
    return STATUS_SENTENCES.get(status, STATUS_SENTENCES[400])


def error_fragment(message: str, status: int) -> HttpResponse:
    """The answer to an htmx request that was refused: the message, retargeted at the page's
    error region whatever element asked. htmx swaps 400 and 409 itself (base.html);
    htmx_errors.js writes the message of other statuses into that region."""
    response = HttpResponse(
        format_html(
            '<p class="message message-error" role="alert">{}</p>'
            '<button type="button" class="toast-dismiss" data-toast-dismiss>Dismiss</button>',
            message,
        ),
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
        if _htmx(request) and isinstance(exception, PermissionDenied):
            # workspaces.permissions.require words its refusals for the person ("Your role
            # (viewer) cannot …"); a bare PermissionDenied gets the plain sentence.
            said = str(exception) or STATUS_SENTENCES[403]
            return error_fragment(said, 403)
        if _htmx(request) and isinstance(exception, Http404):
            # Not the exception's text: get_object_or_404 names models and queries.
            return error_fragment(STATUS_SENTENCES[404], 404)
        return None


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500 (DEBUG off): the request id a person can quote; the traceback logged with
    the same id by Django's request logger. Rendered without context processors: whatever
    failed (the database?) must not fail the error page too."""
    request_id = request_id_of(request)
    sentence = SERVER_ERROR.format(id=request_id)
    if request.path.startswith("/api/"):
        body = {"detail": sentence, "code": "server_error", "request_id": request_id}
        return JsonResponse(body, status=500)
    if _htmx(request):
        return error_fragment(sentence, 500)
    html = get_template("500.html").render({"request_id": request_id})
    return HttpResponse(html, status=500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: an htmx post from a page older than the session gets a sentence in
    the error region; anything else Django's own page."""
    if _htmx(request):
        return error_fragment(CSRF_FAILURE, 403)
    from django.views.csrf import csrf_failure as django_csrf_failure

    return django_csrf_failure(request, reason=reason)


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
