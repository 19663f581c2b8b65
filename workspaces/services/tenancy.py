"""A server operator's grants: GitHub App installations, repositories and local roots
bound to a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from guardrails.audit import SYSTEM, Actor, Target, audit_record
from workspaces import rules
from workspaces.live_access import access_changed
from workspaces.models import (
    GitHubInstallation,
    LocalRootGrant,
    Membership,
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
    with transaction.atomic(durable=True):
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
    with transaction.atomic(durable=True):
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
    with transaction.atomic(durable=True):
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


# Accounts and memberships a server operator's commands set up (manage.py demo_setup, review).
# People sign up and join through invitations; these are the shell's shortcut, audited.

_UNUSABLE = object()


def user_ensure(*, email: str, password: Any = _UNUSABLE) -> Any:
    """The account for `email`, created when missing (audited on the global chain). A given
    `password` is set (audited too, never recorded); without one a new account cannot log in
    with a password."""
    User = get_user_model()
    with transaction.atomic():
        user, created = User.objects.get_or_create(username=email, defaults={"email": email})
        if created:
            if password is _UNUSABLE:
                user.set_unusable_password()
            else:
                user.set_password(password)
            user.save(update_fields=["password"])
            audit_record(
                action="tenancy.user_created",
                actor=SYSTEM,
                target=Target("user", str(user.pk), email),
                payload={"email": email},
            )
        elif password is not _UNUSABLE and not user.check_password(password):
            user.set_password(password)
            user.save(update_fields=["password"])
            audit_record(
                action="tenancy.user_password_set",
                actor=SYSTEM,
                target=Target("user", str(user.pk), email),
                payload={"email": email},
            )
    return user


def member_add(*, workspace: Workspace, user: Any, role: str, actor: Any = None) -> Membership:
    """Make `user` a member in `role` without an invitation (a server operator's act); an
    existing membership is kept as it is."""
    if role not in rules.Role.__members__.values():
        raise RuleError(f"Unknown role {role!r}.")
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(
            workspace=workspace, user=user, defaults={"role": role}
        )
        if created:
            access_changed(user.pk)
            _operator_audit(
                "tenancy.member_added",
                workspace,
                actor,
                Target("user", str(user.pk), user.email),
                role=role,
            )
    return membership
