"""Request ids, and htmx requests that find the session gone.

- `RequestIdMiddleware` gives every request an id: a sane incoming `X-Request-ID` (set by a
  proxy) or a new one. It is on the request, in every log line written while the request runs
  (`RequestIdFilter`), in the `X-Request-ID` response header and in the 500 answers
  (config/errors.py), so a person can quote it and the operator find the traceback.
- `HtmxLoginRedirectMiddleware`: a login-required view answers an anonymous request with a
  302 to the sign-in page. An htmx request would follow it and swap the whole sign-in page
  into the fragment it was updating; it gets `HX-Redirect` instead, with `next` pointing at
  the page the person was on (not at the endpoint, which may accept only POST).
- `OwnWritesMiddleware`: a signed-in person's successful write (any method but GET, HEAD,
  OPTIONS) leaves a cookie with its time, so a review page served from a recent render
  (reviews/web/section_renders.py) is never one rendered before their own change. Forging it
  only gets a fresher page.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from contextvars import ContextVar
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect

REQUEST_ID_HEADER = "X-Request-ID"
# What a proxy may hand us: a uuid, a hex string, a trace id. Anything else is replaced, so a
# client cannot write arbitrary text into the log lines.
_SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{7,63}")
NO_REQUEST = "-"

_current: ContextVar[str] = ContextVar("request_id", default=NO_REQUEST)


def request_id_from(incoming: str | None) -> str:
    """The incoming id when it looks like one, else a new random one (16 hex digits)."""
    if incoming and _SANE_ID.fullmatch(incoming):
        return incoming
    return secrets.token_hex(8)


def current_request_id() -> str:
    """The id of the request being handled in this context, or "-" outside any request."""
    return _current.get()


def request_id_of(request: HttpRequest) -> str:
    return getattr(request, "request_id", None) or current_request_id()


class RequestIdMiddleware:
    """Outermost, so even an answer of a middleware further in (413, 400) carries the id."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id  # type: ignore[attr-defined]
        token = _current.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            _current.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


class RequestIdFilter(logging.Filter):
    """Puts `request_id` on every record (the formatter prints it): the request's when Django
    logs with the request attached (its 4xx/5xx lines), else the one of the running request."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        found = getattr(request, "request_id", None) if request is not None else None
        record.request_id = found or current_request_id()
        return True


def _same_site_path(request: HttpRequest, url: str) -> str | None:
    """URL as a path (with its query) when it points at this site, else None."""
    if not url or not url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return None
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def login_redirect_for_htmx(request: HttpRequest, response: HttpResponse) -> HttpResponse | None:
    """The HX-Redirect answer replacing RESPONSE when it sends an htmx request to sign in."""
    if request.headers.get("HX-Request") != "true" or response.status_code not in (
        301,
        302,
        303,
        307,
        308,
    ):
        return None
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return None
    login_path = urlsplit(resolve_url(settings.LOGIN_URL)).path
    if urlsplit(response.get("Location", "")).path != login_path:
        return None
    # Back to the page, not to the endpoint the fragment came from; a full-page htmx GET has
    # no other page to go back to.
    here = _same_site_path(request, request.headers.get("HX-Current-URL", ""))
    if here is None and request.method == "GET":
        here = request.get_full_path()
    target = f"{login_path}?{urlencode({'next': here})}" if here else login_path
    return HttpResponseClientRedirect(target)


class HtmxLoginRedirectMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        return login_redirect_for_htmx(request, response) or response


OWN_WRITE_COOKIE = "quorum_wrote"
_READS = ("GET", "HEAD", "OPTIONS")


def own_write_ms(request: HttpRequest) -> int:
    """When this browser's person last wrote (ms since the epoch), 0 if unknown."""
    raw = request.COOKIES.get(OWN_WRITE_COOKIE, "")
    return int(raw) if raw.isdigit() and len(raw) <= 16 else 0


class OwnWritesMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        user = getattr(request, "user", None)
        wrote = request.method not in _READS and response.status_code < 400
        if wrote and user is not None and user.is_authenticated:
            response.set_cookie(
                OWN_WRITE_COOKIE,
                str(int(time.time() * 1000)),
                max_age=60,
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        return response
