"""Page input that no field accepts, refused with a message before any view reads it.

A NUL character (which PostgreSQL cannot store and no browser form sends) or a lone surrogate
(not text at all) in a page's query string or form body would otherwise reach a filter or a
query and end as a server error, or, in a streamed export, as a download cut off after its
headers. The API validates its own input (config/api_types.py); webhooks are signed bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.http import HttpRequest, HttpResponse

from config.application_errors import ApplicationError, ErrorCode
from config.errors import error_response

_EXEMPT = ("/api/", "/webhooks/", "/static/")
_FORM = "application/x-www-form-urlencoded"


class MalformedInput(ApplicationError):
    code = ErrorCode.MALFORMED_INPUT
    http_status = 400


def _shown(name: str) -> str:
    return "".join(c if c.isprintable() and not _surrogate(c) else "?" for c in name)[:40]


def _surrogate(c: str) -> bool:
    return "\ud800" <= c <= "\udfff"


def input_problem(pairs: Iterable[tuple[str, str]]) -> str:
    """Why these (name, value) pairs cannot be read as a page's input ("" when they can)."""
    for name, value in pairs:
        for text in (name, value):
            if "\x00" in text:
                return (
                    f"The field “{_shown(name)}” contains a NUL character, which no field "
                    "accepts. Nothing was done."
                )
            if any(_surrogate(c) for c in text):
                return (
                    f"The field “{_shown(name)}” contains characters that are not text. "
                    "Nothing was done."
                )
    return ""


def _pairs(request: HttpRequest) -> Iterable[tuple[str, str]]:
    for name, values in request.GET.lists():
        yield from ((name, v) for v in values)
    if request.method == "POST" and request.content_type == _FORM:
        for name, values in request.POST.lists():
            yield from ((name, v) for v in values)


class MalformedInputMiddleware:
    """After authentication (the refusal page is the site's own), before any view."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(_EXEMPT):
            problem = input_problem(_pairs(request))
            if problem:
                return error_response(request, MalformedInput(problem))
        return self.get_response(request)
