"""The one base of every error a person or a client is meant to read.

An `ApplicationError` carries a message written for the user (shown as is), a stable `code`
a client can branch on, and `http_status`, the status it is answered with. The domain and the
services raise subclasses of it; nothing below the web layer builds a response. The mapping to
HTTP happens once for the API (config/api.py: {"detail": message, "code": code}) and once for
pages (config/errors.py: a message and a redirect, or an error fragment for htmx requests).

Pure Python, so the functional core (reviews/domain, workspaces/rules.py, guardrails/rules.py)
may define its own errors on top of it.
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """An error whose message is for the user. Subclasses set `code` and `http_status`; one
    raise site may override either (`RoundError(..., http_status=409)`)."""

    code: str = "refused"
    http_status: int = 400

    def __init__(
        self, message: str = "", *, code: str | None = None, http_status: int | None = None
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if http_status is not None:
            self.http_status = http_status

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def extra(self) -> dict[str, Any]:
        """Fields an API answer carries besides `detail` and `code` (ids of what exists)."""
        return {}

    def body(self) -> dict[str, Any]:
        """The API answer: {"detail": message, "code": code, **extra}."""
        return {"detail": self.message, "code": self.code, **self.extra()}
