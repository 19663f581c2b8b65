"""The model a reviewer's call runs on and the key it carries, resolved before every call.

Shared by the pipeline's reviewer runs and by the ask service, which tells a page whether a
finding's reviewer can be asked at all."""

from __future__ import annotations

import os

from django.conf import settings

from reviews.agents.model_run_types import ModelConfig, provider_name
from reviews.models import ReviewerStream
from workspaces.model_choice import ModelChoice, is_server_endpoint, model_key_source
from workspaces.models import Workspace, server_model
from workspaces.sealing import UnsealError, unseal


def runtime_model(
    choice: ModelChoice | None, workspace: Workspace, *, budget: int
) -> tuple[ModelConfig, str] | None:
    """The runtime's settings for the chosen model, and its API key ("" when it has none:
    missing_key says why). The key is resolved here, before every call, never cached."""
    provider = provider_name(choice.provider) if choice is not None else None
    if choice is None or provider is None:
        return None
    return (
        ModelConfig(
            provider=provider,
            model=choice.name,
            base_url=choice.base_url or None,
            timeout=float(workspace.call_timeout_seconds),
            total_tokens_limit=budget,
        ),
        model_key(choice)[0],
    )


def model_key(choice: ModelChoice) -> tuple[str, str]:
    """The key a call with `choice` may carry, and why it has none ("" when it has one).
    The rule (workspaces/model_choice.py model_key_source) decides the source; the value is checked
    too: whatever its source, the server's own key never leaves for another endpoint."""
    server = server_model()
    source = model_key_source(choice, server=server, allowed=settings.QUORUM_MODEL_KEY_VARIABLES)
    if source.kind == "none":
        return "", source.reason
    if source.kind == "sealed":
        try:
            key = unseal(choice.sealed_key)
        except UnsealError as exc:
            return "", str(exc)
    elif source.kind == "variable":
        key = os.environ.get(source.variable, "")
        if not key:
            return "", (
                f"the environment variable {source.variable}, which this reviewer's settings "
                "name for its key, is not set on the server"
            )
    else:
        key = settings.QUORUM_LLM_API_KEY
        if not key:
            return "", ""  # the server has none: the runtime reports it
    server_key = settings.QUORUM_LLM_API_KEY
    if server_key and key == server_key and not is_server_endpoint(choice, server):
        return "", (
            "the key this reviewer's settings lead to is the server's own key, which is only "
            "sent to the server's own endpoint"
        )
    return key, ""


def missing_key(choice: ModelChoice | None) -> str:
    """Why a reviewer has no key, in the words its failed stream shows ("" if no reason of its
    settings: the server has none, which the runtime reports)."""
    if choice is None:
        return ""
    return model_key(choice)[1]


def config_key(stream: ReviewerStream) -> str:
    # A stream is named after its reviewer's config key; a follow-up after its dimension's.
    return stream.name.removeprefix("followup-")
