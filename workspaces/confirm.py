"""Server-side confirmation for destructive or irreversible buttons, with no JavaScript.

A form that does such a thing carries `confirm=yes`. A request without it (a bare POST, a
script, a stale page) does nothing: it gets a 400 page that says what would happen and
offers the same request again, with the confirmation, behind one more explicit button.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def confirmed(request: HttpRequest) -> bool:
    return request.POST.get("confirm") == "yes"


def confirmation_page(
    request: HttpRequest,
    *,
    title: str,
    consequences: list[str],
    button: str,
    cancel_url: str,
    keep: str = "Go back, change nothing",
    context: dict | None = None,
    status: int = 200,
) -> HttpResponse:
    """Ask again. The original form fields are carried over (except the CSRF token). The
    question is a page like any other (200); `keep` labels the way back, which must never read
    like the action itself."""
    fields = [
        (name, value)
        for name in request.POST
        if name not in ("csrfmiddlewaretoken", "confirm")
        for value in request.POST.getlist(name)
    ]
    page = {
        "title": title,
        "consequences": consequences,
        "button": button,
        "cancel_url": cancel_url,
        "keep": keep,
        "fields": fields,
        "action": request.get_full_path(),
        **(context or {}),
    }
    return render(request, "workspaces/confirm.html", page, status=status)
