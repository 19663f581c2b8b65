"""Untrusted URLs: only absolute http(s) URLs are stored or rendered as links.

Pure functions. URLs arrive from CI systems (axis evidence), from GitHub responses (published
reviews) and from admins (model endpoints); a `javascript:` or `data:` URL rendered as a link
runs in the viewer's session. Browsers strip surrounding whitespace and control characters and
drop tabs and newlines anywhere ("java\\tscript:"), so any of those makes a URL invalid here
instead of being normalised: what is stored is exactly what was checked.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator

WEB_SCHEMES = frozenset({"http", "https"})
MAX_URL_LENGTH = 2048


def web_url_problem(value: object) -> str | None:
    """Why VALUE is not an absolute http(s) URL, or None when it is one."""
    if not isinstance(value, str):
        return "a URL must be a string"
    if not value:
        return "the URL is empty"
    if len(value) > MAX_URL_LENGTH:
        return f"the URL is longer than {MAX_URL_LENGTH} characters"
    if any(ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in value):
        return "the URL contains whitespace or control characters"
    if "\\" in value:
        return "the URL contains a backslash"
    try:
        parts = urlsplit(value)
        hostname = parts.hostname
        parts.port  # noqa: B018 — raises ValueError on a malformed port
    except ValueError:
        return "the URL cannot be parsed"
    if parts.scheme.lower() not in WEB_SCHEMES:
        return "only http and https URLs are accepted"
    if not value.lower().startswith(f"{parts.scheme.lower()}://") or not hostname:
        return "the URL must be absolute, with a host (https://host/…)"
    return None


def is_web_url(value: object) -> bool:
    return web_url_problem(value) is None


def web_url_or_blank(value: object) -> str:
    """VALUE if it is a web URL, else "": for URLs from elsewhere that are stored best-effort."""
    return value if isinstance(value, str) and is_web_url(value) else ""


def check_web_url(value: str) -> str:
    """VALUE unchanged if it is blank or a web URL; ValueError with the reason otherwise."""
    if value == "":
        return value
    problem = web_url_problem(value)
    if problem:
        raise ValueError(problem)
    return value


# For API schemas: "" (no URL) or an absolute http(s) URL; anything else is a 422.
OptionalWebUrl = Annotated[str, AfterValidator(check_web_url)]
