"""The model a reviewer runs on and where its key comes from: pure rules the reviewer
settings, the workspace's rows and the pipeline share (the key itself is read by the caller)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from workspaces.rules import key_variable_problem


def model_label(provider: str, name: str) -> str:
    return f"{provider}:{name}" if provider and name else ""


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model a reviewer runs on. Its key (model_key_source): the key an admin entered for
    it (`sealed_key`, encrypted), else the server variable `api_key_env` names, else the
    server's own key, which only the server's own endpoint receives. `base_url` "" is the
    provider's default endpoint."""

    provider: str
    name: str
    base_url: str = ""
    api_key_env: str = ""
    sealed_key: str = ""

    @property
    def label(self) -> str:
        return model_label(self.provider, self.name)


def model_choice(
    *,
    provider: str,
    name: str,
    base_url: str,
    api_key_env: str,
    default: ModelChoice | None,
    sealed_key: str = "",
) -> ModelChoice | None:
    """A reviewer's own model settings over the server's defaults, field by field (a reviewer
    may name only a model and keep the server's provider). None when no provider and model
    name are known: the reviewer cannot run, only the offline analyzers can."""
    provider = provider or (default.provider if default else "")
    name = name or (default.name if default else "")
    if not provider or not name:
        return None
    return ModelChoice(
        provider=provider,
        name=name,
        base_url=base_url or (default.base_url if default else ""),
        api_key_env=api_key_env,
        sealed_key=sealed_key,
    )


def _endpoint(choice: ModelChoice) -> tuple[str, str]:
    return choice.provider, choice.base_url.strip().rstrip("/").lower()


def is_server_endpoint(choice: ModelChoice, server: ModelChoice | None) -> bool:
    """Whether a call with `choice` goes where the server's own model calls go: the same
    provider at the same base URL (both "" is the provider's default endpoint)."""
    return server is not None and _endpoint(choice) == _endpoint(server)


@dataclass(frozen=True, slots=True)
class KeySource:
    """Where a reviewer's key comes from: "sealed" (its own, entered by an admin),
    "variable" (`variable`, an allow-listed server variable), "server" (the server's key, to
    the server's endpoint), or "none" (`reason` says why, in the failed stream's words)."""

    kind: Literal["sealed", "variable", "server", "none"]
    variable: str = ""
    reason: str = ""


def model_key_source(
    choice: ModelChoice, *, server: ModelChoice | None, allowed: Collection[str]
) -> KeySource:
    """The one rule for which key a call may carry, applied before every call."""
    if choice.sealed_key:
        return KeySource("sealed")
    if choice.api_key_env:
        problem = key_variable_problem(choice.api_key_env, allowed)
        if problem:
            return KeySource("none", reason=problem)
        return KeySource("variable", variable=choice.api_key_env)
    if is_server_endpoint(choice, server):
        return KeySource("server")
    return KeySource(
        "none",
        reason="this reviewer calls its own endpoint but has no key of its own: the server's "
        "key is only sent to the server's own endpoint (an admin enters the reviewer's key)",
    )
