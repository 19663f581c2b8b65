"""Connecting repositories (GitHub or local) and changing their settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from guardrails.audit import Actor, Target, audit_record
from reviews.services.github import github_app_mode, github_configured, repository_installation
from reviews.sources.github_client import GitHubError
from workspaces import rules
from workspaces.models import (
    Repository,
    Workspace,
)
from workspaces.rules import RuleError
from workspaces.services.archive import repository_restore


def _local_roots(workspace: Workspace) -> list[Path]:
    """Where this workspace may connect local repositories: the roots a server operator granted
    it, within the server-wide fence QUORUM_LOCAL_REPO_ROOTS. A single-tenant install
    (QUORUM_SHARED_LOCAL_ROOTS, the embedded default) grants the whole fence to everyone."""
    fence = [Path(root).resolve() for root in settings.QUORUM_LOCAL_REPO_ROOTS]
    if settings.QUORUM_SHARED_LOCAL_ROOTS:
        return fence
    granted = [Path(p) for p in workspace.local_root_grants.values_list("path", flat=True)]
    return [g for g in granted if any(g == f or g.is_relative_to(f) for f in fence)]


def resolve_local_repository(path: str, workspace: Workspace, *, anywhere: bool = False) -> Path:
    """Resolve `path` (symlinks included) and insist it lies under a root granted to
    `workspace` (`anywhere`: a server operator's own command, which needs no grant)."""
    if not path or "\x00" in path:
        raise RuleError("Give the absolute path of a git repository on the server.")
    candidate = Path(path)
    if not candidate.is_absolute():
        raise RuleError("The local path must be absolute.")
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        raise RuleError(f"{path} does not exist on the server.") from None
    roots = _local_roots(workspace)
    inside = any(resolved == root or resolved.is_relative_to(root) for root in roots)
    if not anywhere and not inside:
        allowed = ", ".join(str(r) for r in roots) or "(none granted to this workspace)"
        raise RuleError(
            f"{path} is outside the directories this workspace may use: {allowed}. "
            "A server operator grants directories per workspace "
            "(manage.py tenancy grant-local-root)."
        )
    if not resolved.is_dir() or not ((resolved / ".git").exists() or (resolved / "HEAD").is_file()):
        raise RuleError(f"{path} is not a git repository.")
    return resolved


def check_github_access(workspace: Workspace, full_name: str) -> None:
    """Refuse unless `workspace` can prove access to `full_name`: with a GitHub App, the
    repository's installation is bound to this workspace; with a server-wide token, a server
    operator granted the repository to this workspace."""

    if github_app_mode():
        try:
            installation_id, account = repository_installation(full_name)
        except GitHubError as exc:
            raise RuleError(
                f"The Quorum GitHub App is not installed on {full_name} ({exc})."
            ) from exc
        if not workspace.github_installations.filter(installation_id=installation_id).exists():
            raise RuleError(
                f"{full_name} belongs to the GitHub App installation on {account or 'an account'} "
                f"(#{installation_id}), which is not bound to this workspace. A server operator "
                "binds installations to workspaces (manage.py tenancy bind-installation)."
            )
    elif github_configured():
        if not workspace.repository_grants.filter(full_name__iexact=full_name).exists():
            raise RuleError(
                f"{full_name} has not been granted to this workspace. With a server-wide GitHub "
                "token a server operator grants each repository (manage.py tenancy "
                "grant-repository)."
            )
    else:
        raise RuleError("GitHub is not configured on this server: nothing can be connected.")


def repository_connect(
    *,
    workspace: Workspace,
    actor: Any,
    kind: str,
    name: str,
    base_branch: str = "main",
    auto_review: bool = False,
    review_drafts: bool = False,
    request: Any = None,
    operator: bool = False,
) -> Repository:
    """Connect a repository (or connect an archived one again, its reviews restored). The
    settings page, the API and the operator's commands all connect here, audited alike.
    `operator`: a server operator at the shell (`manage.py review`), who needs no grant or
    installation for what the server itself can read."""
    branch = rules.clean_branch(base_branch or "main")
    if kind == Repository.Kind.GITHUB:
        fields = {"full_name": rules.clean_github_name(name)}
        if not operator:
            check_github_access(workspace, fields["full_name"])
    elif kind == Repository.Kind.LOCAL:
        fields = {"local_path": str(resolve_local_repository(name, workspace, anywhere=operator))}
    else:
        raise RuleError(f"Unknown repository kind {kind!r}; use github or local.")
    with transaction.atomic(durable=True):
        existing = (
            Repository.objects.select_for_update()
            .filter(workspace=workspace, kind=kind, **fields)
            .first()
        )
        if existing is not None and existing.archived_at is None:
            raise RuleError(f"{next(iter(fields.values()))} is already connected.")
        if existing is not None:
            return repository_restore(
                existing,
                actor=actor,
                base_branch=branch,
                auto_review=auto_review,
                review_drafts=review_drafts,
                request=request,
            )
        repo = Repository.objects.create(
            workspace=workspace,
            kind=kind,
            base_branch=branch,
            auto_review=auto_review,
            review_drafts=review_drafts,
            **fields,
        )
        audit_record(
            action="repositories.connected",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target.of(repo),
            payload={
                "before": None,
                "after": repo.snapshot(),
                **({"operator": True} if operator else {}),
            },
            request=request,
        )
    return repo


def repository_update(
    *,
    repository: Repository,
    actor: Any,
    base_branch: str | None = None,
    auto_review: bool | None = None,
    review_drafts: bool | None = None,
    hold_fails_check: bool | None = None,
    request: Any = None,
) -> Repository:
    with transaction.atomic(durable=True):
        repo = Repository.objects.select_for_update().get(pk=repository.pk)
        before = repo.snapshot()
        if base_branch is not None:
            repo.base_branch = rules.clean_branch(base_branch)
        if auto_review is not None:
            repo.auto_review = auto_review
        if review_drafts is not None:
            repo.review_drafts = review_drafts
        if hold_fails_check is not None:
            repo.hold_fails_check = hold_fails_check
        if repo.snapshot() == before:
            return repo
        repo.save(update_fields=["base_branch", "auto_review", "review_drafts", "hold_fails_check"])
        audit_record(
            action="repositories.updated",
            actor=Actor.of(actor),
            workspace=repo.workspace,
            target=Target.of(repo),
            payload={"before": before, "after": repo.snapshot()},
            request=request,
        )
    return repo
