"""Personal API tokens: create, revoke, authenticate."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from guardrails.audit import Actor, Target, audit_record
from workspaces.models import (
    ApiToken,
)
from workspaces.rules import RuleError, agent_name_problem


def api_token_create(
    *, user: Any, name: str, agent_name: str = "", request: Any = None
) -> tuple[ApiToken, str]:
    """Create a personal token, or an agent's when `agent_name` is given; returns it with the
    secret, which is never stored or shown again."""
    name = name.strip()
    agent_name = " ".join(agent_name.split())
    if not name:
        raise RuleError("Give the token a name, so you can recognise it later.")
    if agent_name and (problem := agent_name_problem(agent_name)):
        raise RuleError(problem)
    secret = settings.QUORUM_API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic(durable=True):
        token = ApiToken.objects.create(
            user=user,
            name=name[:100],
            agent_name=agent_name,
            prefix=secret[:10],
            digest=ApiToken.digest_of(secret),
        )
        audit_record(
            action="tokens.created",
            actor=Actor.of(user),
            target=Target.of(token),
            payload={"name": token.name, "prefix": token.prefix, "agent": token.agent_name},
            request=request,
        )
    return token, secret


def api_token_revoke(*, token: ApiToken, actor: Any, request: Any = None) -> ApiToken:
    with transaction.atomic(durable=True):
        token = ApiToken.objects.select_for_update().get(pk=token.pk)
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit_record(
                action="tokens.revoked",
                actor=Actor.of(actor),
                target=Target.of(token),
                payload={"name": token.name, "prefix": token.prefix},
                request=request,
            )
    return token


def api_token_authenticate(secret: str) -> Any | None:
    """The user behind a live token, or None. Lookup by digest: constant work per request.

    An agent's token gives its person with `quorum_agent` set to the agent's name (on this
    instance only): the permission module caps the role and the audit trail names the agent."""
    if not secret.startswith(settings.QUORUM_API_TOKEN_PREFIX):
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=ApiToken.digest_of(secret), revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    # Touch last_used at most once a minute: avoid a write on every API call.
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    user = token.user
    user.quorum_agent = token.agent_name  # type: ignore[attr-defined]  # this instance only
    return user
