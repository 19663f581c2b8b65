"""Errors raised by the GitHub client. `retryable` says whether the same call may succeed later."""

from __future__ import annotations

from typing import Any


class GitHubError(Exception):
    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        errors: list[Any] | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.errors: list[Any] = list(errors or [])
        if retryable is not None:
            self.retryable = retryable


class GitHubAuthError(GitHubError):
    """401 (bad, expired or revoked credentials) or an app that cannot get a token."""


class GitHubForbidden(GitHubError):
    """403 that is not a rate limit: the identity lacks a permission."""


class GitHubNotFound(GitHubError):
    """404: missing, or invisible to this identity (GitHub does not say which)."""


class GitHubValidationError(GitHubError):
    """422: GitHub refused the payload; `errors` is GitHub's list, verbatim."""


class GitHubRateLimited(GitHubError):
    """Still rate limited after the allowed waits; `retry_at` (epoch seconds) if known."""

    retryable = True

    def __init__(self, message: str, *, retry_at: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_at = retry_at


class GitHubUnavailable(GitHubError):
    """5xx or a network failure.

    `maybe_applied` is true when a non-idempotent request (creating a review) may have reached
    GitHub: the caller must check before sending it again, or the review is posted twice.
    """

    retryable = True

    def __init__(self, message: str, *, maybe_applied: bool = False, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.maybe_applied = maybe_applied


class DiffTooLarge(GitHubError):
    """406 too_large on the PR diff: fall back to the files list or a local `git diff`."""
