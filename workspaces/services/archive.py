"""Disconnecting a repository (its reviews stay readable), restoring it, and deleting its
reviews for good."""

from __future__ import annotations

from typing import Any

from django.db import models, transaction
from django.utils import timezone

from guardrails.audit import Actor, Target, audit_record
from reviews.models import NodeConfirmation, ReviewNode, ReviewRound, ReviewSpace
from workspaces import rules
from workspaces.hooks import open_rounds_cancel, space_approvals_cancel
from workspaces.models import (
    Membership,
    Repository,
    Tombstone,
)
from workspaces.rules import Perm, RuleError


def repository_footprint(repository: Repository) -> dict[str, int]:
    """What a repository's reviews hold: what disconnecting keeps and deleting removes."""

    nodes = ReviewNode.objects.filter(space__pull_request__repository=repository)
    return {
        "review_spaces": ReviewSpace.objects.filter(pull_request__repository=repository).count(),
        "rounds": ReviewRound.objects.filter(space__pull_request__repository=repository).count(),
        "findings": nodes.count(),
        # A person's or a reviewer's decision on a finding: resolved or dismissed.
        "triage_decisions": nodes.filter(status__in=["resolved", "dismissed"]).count(),
        "confirmations": NodeConfirmation.objects.filter(
            node__space__pull_request__repository=repository
        ).count(),
    }


def repository_archive(*, repository: Repository, actor: Any, request: Any = None) -> dict:
    """Disconnect: the repository leaves every new-review path, its reviews stay, read-only,
    and connecting the same repository again restores it. Open rounds are cancelled, so
    nothing keeps writing to a review nobody can act on. Returns what was kept."""

    with transaction.atomic():
        repo = Repository.objects.select_for_update().get(pk=repository.pk)
        if repo.archived_at is not None:
            raise RuleError(f"{repo} is already disconnected.")
        before = repo.snapshot()
        repo.archived_at = timezone.now()
        repo.save(update_fields=["archived_at"])
        cancelled = open_rounds_cancel(repository=repo, actor=actor, request=request)
        kept = repository_footprint(repo)
        audit_record(
            action="repositories.archived",
            actor=Actor.of(actor),
            workspace=repo.workspace,
            target=Target.of(repo),
            payload={
                "before": before,
                "after": {**repo.snapshot(), "archived": True},
                "kept": kept,
                "rounds_cancelled": cancelled,
            },
            request=request,
        )
    repository.archived_at = repo.archived_at
    return kept


def repository_restore(
    repo: Repository,
    *,
    actor: Any,
    base_branch: str,
    auto_review: bool,
    request: Any,
    review_drafts: bool = False,
) -> Repository:
    """Connecting an archived repository again: the same row, so every review comes back."""
    before = repo.snapshot()
    repo.archived_at = None
    repo.base_branch = base_branch
    repo.auto_review = auto_review
    repo.review_drafts = review_drafts
    repo.save(update_fields=["archived_at", "base_branch", "auto_review", "review_drafts"])
    restored = repository_footprint(repo)
    repo.restored = restored  # tells the caller what came back
    audit_record(
        action="repositories.reconnected",
        actor=Actor.of(actor),
        workspace=repo.workspace,
        target=Target.of(repo),
        payload={
            "before": {**before, "archived": True},
            "after": repo.snapshot(),
            "restored": restored,
        },
        request=request,
    )
    return repo


def repository_remove(*, repository: Repository, actor: Any, request: Any = None) -> dict:
    """Disconnecting never deletes: see repository_archive."""
    return repository_archive(repository=repository, actor=actor, request=request)


def repository_purge(
    *, repository: Repository, actor: Membership, typed_name: str, request: Any = None
) -> dict:
    """Delete a disconnected repository with every review of it, for good (owners only, the
    name typed). Tombstones keep what each deleted review was, so links to it explain instead
    of failing; the audit event records the counts. Returns what was deleted."""

    if not rules.role_allows(actor.role, Perm.DELETE_REVIEWS):
        raise RuleError("Only an owner can delete a repository's reviews for good.")
    with transaction.atomic(durable=True):
        repo = Repository.objects.select_for_update().get(pk=repository.pk)
        rules.check_typed_name(expected=str(repo), typed=typed_name)
        if repo.archived_at is None:
            raise RuleError(
                f"Disconnect {repo} first: its reviews must be read-only (no round running) "
                "before they are deleted."
            )
        counts = repository_footprint(repo)
        spaces = list(
            ReviewSpace.objects.filter(pull_request__repository=repo)
            .select_related("pull_request")
            .annotate(
                n_rounds=models.Count("rounds", distinct=True),
                n_findings=models.Count("nodes", distinct=True),
            )
        )
        user = actor.user
        stones = [
            Tombstone(
                workspace=repo.workspace,
                kind="repository",
                object_id=str(repo.pk),
                label=str(repo),
                counts=counts,
                deleted_by=user,
            )
        ] + [
            Tombstone(
                workspace=repo.workspace,
                kind="reviewspace",
                object_id=str(space.pk),
                label=_space_label(space),
                counts={"rounds": space.n_rounds, "findings": space.n_findings},
                deleted_by=user,
            )
            for space in spaces
        ]
        # A database that reuses ids (SQLite) may already hold a stone for an id: replace it.
        for stone in stones:
            Tombstone.objects.filter(kind=stone.kind, object_id=stone.object_id).delete()
        Tombstone.objects.bulk_create(stones)

        cancelled = space_approvals_cancel(
            workspace=repo.workspace,
            space_ids=[s.pk for s in spaces],
            why=f"The reviews of {repo} were deleted for good.",
            actor=user,
        )
        audit_record(
            action="repositories.deleted",
            actor=Actor.of(user),
            workspace=repo.workspace,
            target=Target.of(repo),
            payload={
                "before": {**repo.snapshot(), "archived": True},
                "after": None,
                "deleted": counts,
                "review_spaces": [{"id": s.pk, "label": _space_label(s)} for s in spaces],
                "approval_requests_cancelled": cancelled,
            },
            request=request,
        )
        repo.delete()
    return counts


def _space_label(space: Any) -> str:
    pr = space.pull_request
    return f"{pr} {pr.title}".strip()[:300] if pr.title else str(pr)[:300]
