"""A server operator's grants: GitHub App installations, repositories and local roots
bound to a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from guardrails.audit import SYSTEM, Actor, Target, audit_record
from workspaces import rules
from workspaces.models import (
    GitHubInstallation,
    LocalRootGrant,
    RepositoryGrant,
    Workspace,
)
from workspaces.rules import RuleError


def _operator_audit(action: str, workspace: Workspace, actor: Any, target: Target, **payload):
    audit_record(
        action=action,
        actor=Actor.of(actor) if actor else SYSTEM,
        workspace=workspace,
        target=target,
        payload=payload,
    )


def installation_bind(
    *, workspace: Workspace, installation_id: int, account_login: str = "", actor: Any = None
) -> GitHubInstallation:
    """Bind a GitHub App installation to one workspace (a server operator's act)."""
    with transaction.atomic():
        existing = GitHubInstallation.objects.filter(installation_id=installation_id).first()
        if existing is not None and existing.workspace_id != workspace.pk:
            raise RuleError(
                f"Installation {installation_id} is bound to another workspace; unbind it first."
            )
        row, _ = GitHubInstallation.objects.update_or_create(
            installation_id=installation_id,
            defaults={
                "workspace": workspace,
                "account_login": account_login,
                "bound_by": actor if getattr(actor, "pk", None) else None,
            },
        )
        _operator_audit(
            "tenancy.installation_bound",
            workspace,
            actor,
            Target("githubinstallation", str(installation_id), account_login),
            installation_id=installation_id,
            account=account_login,
        )
    return row


def installation_unbind(*, installation_id: int, actor: Any = None) -> None:
    with transaction.atomic():
        row = GitHubInstallation.objects.select_related("workspace").get(
            installation_id=installation_id
        )
        row.delete()
        _operator_audit(
            "tenancy.installation_unbound",
            row.workspace,
            actor,
            Target("githubinstallation", str(installation_id), row.account_login),
            installation_id=installation_id,
        )


def repository_grant(*, workspace: Workspace, full_name: str, actor: Any = None) -> RepositoryGrant:
    name = rules.clean_github_name(full_name)
    with transaction.atomic():
        row, _ = RepositoryGrant.objects.get_or_create(
            workspace=workspace,
            full_name=name,
            defaults={"granted_by": actor if getattr(actor, "pk", None) else None},
        )
        _operator_audit(
            "tenancy.repository_granted",
            workspace,
            actor,
            Target("repositorygrant", name, name),
            full_name=name,
        )
    return row


def local_root_grant(*, workspace: Workspace, path: str, actor: Any = None) -> LocalRootGrant:
    try:
        resolved = Path(path).resolve(strict=True)
    except (OSError, RuntimeError):
        raise RuleError(f"{path} does not exist on the server.") from None
    fence = [Path(root).resolve() for root in settings.QUORUM_LOCAL_REPO_ROOTS]
    if not resolved.is_dir() or not any(resolved == f or resolved.is_relative_to(f) for f in fence):
        raise RuleError(
            f"{path} must be a directory under QUORUM_LOCAL_REPO_ROOTS "
            f"({', '.join(map(str, fence)) or 'none'})."
        )
    with transaction.atomic():
        row, _ = LocalRootGrant.objects.get_or_create(
            workspace=workspace,
            path=str(resolved),
            defaults={"granted_by": actor if getattr(actor, "pk", None) else None},
        )
        _operator_audit(
            "tenancy.local_root_granted",
            workspace,
            actor,
            Target("localrootgrant", str(row.pk), str(resolved)),
            path=str(resolved),
        )
    return row
