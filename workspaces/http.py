"""Request types the views share: what the middleware adds, for the type checker.

Django builds the requests as usual; these classes only say what a view may rely on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class HtmxHttpRequest(HttpRequest):
    """Every request: django-htmx's middleware says whether htmx sent it (`request.htmx`)."""

    htmx: HtmxDetails


class AuthenticatedHttpRequest(HtmxHttpRequest):
    """What a view behind `login_required` receives: the user is signed in, never anonymous."""

    user: User
