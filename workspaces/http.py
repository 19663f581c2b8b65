"""Request types the views share."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest


class AuthenticatedHttpRequest(HttpRequest):
    """What a view behind `login_required` receives: the user is signed in, never anonymous.

    For the type checker only; Django builds the request as usual."""

    user: User
