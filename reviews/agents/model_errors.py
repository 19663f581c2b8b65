"""A failed model run as the pipeline sees it: `ModelRunError` with `retryable` set, and
`classify_error`, which sorts a provider's or pydantic-ai's exception into a retryable one
(timeouts, connection errors, 429 and 5xx) or a permanent one (401/403, an unknown model, a
rejected request, an exhausted budget, a misbehaving model). Apart from the runtime so callers
can catch and classify failures without the adapter's machinery.
"""

from __future__ import annotations

from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelRequestTimeout,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)

from reviews.agents.model_run_types import (
    RunUsageSummary,
)


class ModelRunError(Exception):
    """A reviewer run failed. `retryable` says whether running it again can help."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        kind: str,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.kind = kind  # auth, not_found, quota, rate_limited, timeout, connection, …
        self.status = status  # the provider's HTTP status, when there was one
        # What the run spent before it failed (set by `ModelRuntime.run`).
        self.usage: RunUsageSummary = RunUsageSummary()


class RetryableModelError(ModelRunError):
    def __init__(self, message: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(message, retryable=True, kind=kind, status=status)


class PermanentModelError(ModelRunError):
    def __init__(self, message: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(message, retryable=False, kind=kind, status=status)


def classify_error(exc: BaseException) -> ModelRunError:
    """Map a pydantic-ai / SDK failure to a `ModelRunError` that says whether a retry helps."""
    status = getattr(exc, "status_code", None)
    model = getattr(exc, "model_name", "") or ""
    where = f" ({model})" if model else ""
    # Order matters: the specific categories are subclasses of the generic ones.
    if isinstance(exc, ModelAuthenticationError) or status in (401, 403):
        return PermanentModelError(
            f"the provider refused the API key{where}", kind="auth", status=status
        )
    if isinstance(exc, ModelNotFoundError) or status == 404:
        return PermanentModelError(f"unknown model{where}", kind="not_found", status=status)
    if isinstance(exc, ModelQuotaExceededError):
        return PermanentModelError(f"provider quota exhausted{where}", kind="quota", status=status)
    if isinstance(exc, ModelRateLimitError) or status == 429:
        return RetryableModelError(f"rate limited{where}", kind="rate_limited", status=status)
    if isinstance(exc, ModelRequestTimeout | ModelTimeoutError | TimeoutError):
        return RetryableModelError(f"the model call timed out{where}", kind="timeout")
    if isinstance(exc, ModelConnectionError):
        return RetryableModelError(f"could not reach the provider{where}: {exc}", kind="connection")
    if isinstance(exc, ModelServerError | ModelUnavailableError) or (
        isinstance(status, int) and status >= 500
    ):
        return RetryableModelError(f"provider error{where}", kind="server_error", status=status)
    if isinstance(status, int) and status in (408, 409):
        return RetryableModelError(f"provider asked to retry{where}", kind="retry", status=status)
    if isinstance(exc, ModelRequestRejectedError | ModelHTTPError):
        return PermanentModelError(
            f"the provider rejected the request{where}: {exc}", kind="bad_request", status=status
        )
    if isinstance(exc, ModelAPIError):
        return RetryableModelError(f"provider API error{where}: {exc}", kind="api_error")
    if isinstance(exc, UsageLimitExceeded):
        return PermanentModelError(f"token or request budget exhausted: {exc}", kind="budget")
    if isinstance(exc, UnexpectedModelBehavior):
        return PermanentModelError(f"the model misbehaved: {exc}", kind="model_behaviour")
    if isinstance(exc, AgentRunError):
        return PermanentModelError(f"the run failed: {exc}", kind="run_error")
    return PermanentModelError(f"unexpected error: {type(exc).__name__}: {exc}", kind="internal")
