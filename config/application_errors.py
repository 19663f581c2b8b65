"""The one base of every error a person or a client is meant to read.

An `ApplicationError` carries a message written for the user (shown as is), a stable `code`
a client can branch on, and `http_status`, the status it is answered with. The domain and the
services raise subclasses of it; nothing below the web layer builds a response. The mapping to
HTTP happens once for the API (config/api.py: {"detail": message, "code": code}) and once for
pages (config/errors.py: a message and a redirect, or an error fragment for htmx requests).

It lives in `config/` because every app and layer raises it. Pure Python, so the functional
core (reviews/domain, workspaces/rules.py, guardrails/rules.py) may define its own errors on
top of it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Every `code` an API answer can carry. A client branches on these strings, so a value is
    never renamed; a new refusal adds a member."""

    AGENT_CANNOT_ACCEPT = "agent_cannot_accept"
    ALREADY_PUBLISHED = "already_published"
    ANSWER_REFUSED = "answer_refused"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_REFUSED = "approval_refused"
    APPROVER_REQUIRED = "approver_required"
    ASK_FAILED = "ask_failed"
    ASK_REFUSED = "ask_refused"
    BAD_TIER = "bad_tier"
    DISAGREEMENT_REFUSED = "disagreement_refused"
    DUPLICATE_NODE = "duplicate_node"
    FINDING_REFUSED = "finding_refused"
    FLAG_CONFLICT = "flag_conflict"
    FORBIDDEN = "forbidden"
    MALFORMED_INPUT = "malformed_input"
    NO_API_BREAK = "no_api_break"
    NO_ROUND = "no_round"
    NOT_FOUND = "not_found"
    PROPOSAL_DECIDED = "proposal_decided"
    PROPOSAL_REFUSED = "proposal_refused"
    PUBLISH_REFUSED = "publish_refused"
    QUEUE_UNAVAILABLE = "queue_unavailable"
    REASON_REQUIRED = "reason_required"
    REASON_TOO_LONG = "reason_too_long"
    REFUSED = "refused"
    REPOSITORY_ARCHIVED = "repository_archived"
    REVIEW_REFUSED = "review_refused"
    ROUND_CONFLICT = "round_conflict"
    ROUND_NOT_FINISHED = "round_not_finished"
    ROUND_REFUSED = "round_refused"
    ROUND_SUPERSEDED = "round_superseded"
    RULE_VIOLATION = "rule_violation"
    SARIF_INVALID = "sarif_invalid"
    SARIF_TOO_MANY_RESULTS = "sarif_too_many_results"
    SARIF_TOOL_NAME_TAKEN = "sarif_tool_name_taken"
    SCHEMA = "schema"
    SELF_CONFIRMATION = "self_confirmation"
    THREAD_REFUSED = "thread_refused"
    TICKET_REFUSED = "ticket_refused"
    TRANSITION_REFUSED = "transition_refused"
    UNAUTHENTICATED = "unauthenticated"
    UNKNOWN_ACTION = "unknown_action"


class ApplicationError(Exception):
    """An error whose message is for the user. Subclasses set `code` and `http_status`; one
    raise site may override either (`RoundError(..., http_status=409)`)."""

    code: str = ErrorCode.REFUSED
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
