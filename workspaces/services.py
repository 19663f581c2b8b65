"""Every write to workspace state, one function per change, each audited (DESIGN.md §3.12)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from guardrails.audit import Actor, Target, audit_record
from workspaces import rules
from workspaces.defaults import DEFAULT_REVIEWERS
from workspaces.live_access import access_changed
from workspaces.models import (
    ApiToken,
    Invitation,
    Membership,
    Repository,
    ReviewerConfig,
    Workspace,
)
from workspaces.rules import RuleError

User = get_user_model()


def workspace_create(*, name: str, owner: Any, slug: str = "", request: Any = None) -> Workspace:
    name = name.strip()
    if not name:
        raise RuleError("A workspace needs a name.")
    slug = slugify(slug or name)[:50]
    if not slug:
        raise RuleError("The workspace name must contain letters or digits.")
    with transaction.atomic():
        if Workspace.objects.filter(slug=slug).exists():
            raise RuleError(f"The address {slug!r} is taken; choose another name.")
        workspace = Workspace.objects.create(
            name=name, slug=slug, gated_axes=list(rules.DEFAULT_GATED_AXES)
        )
        Membership.objects.create(workspace=workspace, user=owner, role=rules.Role.OWNER)
        ReviewerConfig.objects.bulk_create(
            ReviewerConfig(workspace=workspace, builtin=True, **spec) for spec in DEFAULT_REVIEWERS
        )
        audit_record(
            action="workspace.created",
            actor=Actor.of(owner),
            workspace=workspace,
            target=Target.of(workspace),
            payload={"name": name, "slug": slug},
            request=request,
        )
    return workspace


def rules_update(
    *, workspace: Workspace, actor: Any, tier: str, gated_axes: list[str], request: Any = None
) -> Workspace:
    if tier not in rules.Tier.__members__.values():
        allowed = ", ".join(t.value for t in rules.Tier)
        raise RuleError(f"Unknown tier {tier!r}; choose one of: {allowed}.")
    gated = rules.clean_gated_axes(gated_axes)
    with transaction.atomic():
        ws = Workspace.objects.select_for_update().get(pk=workspace.pk)
        before = {"tier": ws.tier, "gated_axes": ws.gated_axes}
        ws.tier, ws.gated_axes = tier, gated
        ws.save(update_fields=["tier", "gated_axes"])
        if before["tier"] != tier:
            audit_record(
                action="rules.tier_changed",
                actor=Actor.of(actor),
                workspace=ws,
                target=Target.of(ws),
                payload={"before": before["tier"], "after": tier},
                request=request,
            )
        if before["gated_axes"] != gated:
            audit_record(
                action="rules.gated_axes_changed",
                actor=Actor.of(actor),
                workspace=ws,
                target=Target.of(ws),
                payload={"before": before["gated_axes"], "after": gated},
                request=request,
            )
    return ws


# Members ------------------------------------------------------------------------------------


def _owner_count_locked(workspace: Workspace) -> int:
    # Lock the owner rows so two admins demoting the last two owners at once cannot both pass.
    owners = Membership.objects.select_for_update().filter(
        workspace=workspace, role=rules.Role.OWNER
    )
    return len(list(owners))


def member_invite(
    *, actor: Membership, email: str, role: str, request: Any = None
) -> Membership | Invitation:
    workspace = actor.workspace
    email = User.objects.normalize_email(email.strip()).lower()
    if "@" not in email:
        raise RuleError(f"{email!r} is not an email address.")
    rules.check_role_change(actor_role=actor.role, target_role=role, new_role=role, owners=2)
    with transaction.atomic():
        user = User.objects.filter(email__iexact=email).first()
        if user is not None:
            if Membership.objects.filter(workspace=workspace, user=user).exists():
                raise RuleError(f"{email} is already a member.")
            result: Membership | Invitation = Membership.objects.create(
                workspace=workspace, user=user, role=role
            )
            action = "members.added"
        else:
            try:
                with transaction.atomic():
                    result = Invitation.objects.create(
                        workspace=workspace, email=email, role=role, invited_by=actor.user
                    )
            except IntegrityError:
                raise RuleError(f"{email} has already been invited.") from None
            action = "members.invited"
        audit_record(
            action=action,
            actor=Actor.of(actor.user),
            workspace=workspace,
            target=Target("user", email, email),
            payload={"email": email, "role": role},
            request=request,
        )
    return result


def member_change_role(
    *, actor: Membership, membership: Membership, role: str, request: Any = None
) -> Membership:
    with transaction.atomic():
        owners = _owner_count_locked(actor.workspace)
        target = Membership.objects.select_for_update().get(pk=membership.pk)
        rules.check_role_change(
            actor_role=actor.role, target_role=target.role, new_role=role, owners=owners
        )
        before = target.role
        if before == role:
            return target
        target.role = role
        target.save(update_fields=["role"])
        access_changed(target.user_id)
        audit_record(
            action="members.role_changed",
            actor=Actor.of(actor.user),
            workspace=actor.workspace,
            target=Target("user", str(target.user_id), target.user.email),
            payload={"before": before, "after": role},
            request=request,
        )
    return target


def member_remove(*, actor: Membership, membership: Membership, request: Any = None) -> None:
    with transaction.atomic():
        owners = _owner_count_locked(actor.workspace)
        target = Membership.objects.select_for_update().get(pk=membership.pk)
        rules.check_role_change(
            actor_role=actor.role, target_role=target.role, new_role=None, owners=owners
        )
        target.delete()
        access_changed(target.user_id)
        audit_record(
            action="members.removed",
            actor=Actor.of(actor.user),
            workspace=actor.workspace,
            target=Target("user", str(target.user_id), target.user.email),
            payload={"before": target.role, "after": None},
            request=request,
        )


def invitation_revoke(*, actor: Membership, invitation: Invitation, request: Any = None) -> None:
    with transaction.atomic():
        invitation.delete()
        audit_record(
            action="members.invitation_revoked",
            actor=Actor.of(actor.user),
            workspace=actor.workspace,
            target=Target("user", invitation.email, invitation.email),
            payload={"email": invitation.email, "role": invitation.role},
            request=request,
        )


def invitations_accept(*, user: Any) -> list[Membership]:
    """Turn the invitations addressed to a new account's email into memberships."""
    created = []
    with transaction.atomic():
        for inv in Invitation.objects.select_for_update().filter(email__iexact=user.email):
            membership, new = Membership.objects.get_or_create(
                workspace=inv.workspace, user=user, defaults={"role": inv.role}
            )
            inv.delete()
            if new:
                created.append(membership)
                audit_record(
                    action="members.invitation_accepted",
                    actor=Actor.of(user),
                    workspace=inv.workspace,
                    target=Target("user", str(user.pk), user.email),
                    payload={"role": inv.role},
                )
    return created


# Reviewer configs ---------------------------------------------------------------------------

_REVIEWER_FIELDS = (
    "name",
    "base_agent",
    "brief",
    "enabled",
    "model_provider",
    "model_name",
    "instructions",
    "anti_patterns",
    "criteria",
    "few_shots",
    "calibrated_model",
)


def _clean_reviewer_data(data: dict[str, Any]) -> dict[str, Any]:
    unknown = set(data) - set(_REVIEWER_FIELDS)
    if unknown:
        raise RuleError(f"Unknown reviewer field(s): {', '.join(sorted(unknown))}.")
    clean = dict(data)
    if "name" in clean and not str(clean["name"]).strip():
        raise RuleError("A reviewer needs a name.")
    if "base_agent" in clean and clean["base_agent"] not in rules.BASE_AGENTS:
        raise RuleError(
            f"Unknown base agent {clean['base_agent']!r}; one of: {', '.join(rules.BASE_AGENTS)}."
        )
    if "model_provider" in clean and clean["model_provider"] not in rules.MODEL_PROVIDERS:
        raise RuleError(f"Unknown model provider {clean['model_provider']!r}.")
    if "anti_patterns" in clean:
        clean["anti_patterns"] = rules.clean_anti_patterns(clean["anti_patterns"])
    if "criteria" in clean:
        clean["criteria"] = rules.clean_criteria(clean["criteria"])
    if "few_shots" in clean:
        clean["few_shots"] = rules.clean_few_shots(clean["few_shots"])
    return clean


def reviewer_config_update(
    *, config: ReviewerConfig, actor: Any, data: dict[str, Any], request: Any = None
) -> ReviewerConfig:
    clean = _clean_reviewer_data(data)
    if config.builtin and clean.get("base_agent", config.base_agent) != config.base_agent:
        raise RuleError("The base agent of a built-in reviewer cannot change.")
    with transaction.atomic():
        cfg = ReviewerConfig.objects.select_for_update().get(pk=config.pk)
        before = {f: getattr(cfg, f) for f in clean if getattr(cfg, f) != clean[f]}
        if not before:
            return cfg
        for field in before:
            setattr(cfg, field, clean[field])
        cfg.save()
        audit_record(
            action="reviewers.updated",
            actor=Actor.of(actor),
            workspace=cfg.workspace,
            target=Target.of(cfg),
            payload={"before": before, "after": {f: clean[f] for f in before}},
            request=request,
        )
    return cfg


def reviewer_config_create(
    *, workspace: Workspace, actor: Any, key: str, data: dict[str, Any], request: Any = None
) -> ReviewerConfig:
    key = slugify(key)[:50]
    if not key:
        raise RuleError("A reviewer needs a key (letters, digits, dashes).")
    clean = _clean_reviewer_data(data)
    if "base_agent" not in clean or "name" not in clean:
        raise RuleError("A custom reviewer needs a name and a base agent.")
    with transaction.atomic():
        if ReviewerConfig.objects.filter(workspace=workspace, key=key).exists():
            raise RuleError(f"A reviewer with key {key!r} already exists.")
        cfg = ReviewerConfig.objects.create(workspace=workspace, key=key, builtin=False, **clean)
        audit_record(
            action="reviewers.created",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target.of(cfg),
            payload={"before": None, "after": {"key": key, **clean}},
            request=request,
        )
    return cfg


def reviewer_config_delete(*, config: ReviewerConfig, actor: Any, request: Any = None) -> None:
    if config.builtin:
        raise RuleError("Built-in reviewers cannot be deleted; disable them instead.")
    with transaction.atomic():
        snapshot = {f: getattr(config, f) for f in _REVIEWER_FIELDS}
        audit_record(
            action="reviewers.deleted",
            actor=Actor.of(actor),
            workspace=config.workspace,
            target=Target.of(config),
            payload={"before": {"key": config.key, **snapshot}, "after": None},
            request=request,
        )
        config.delete()


# Repositories -------------------------------------------------------------------------------


def resolve_local_repository(path: str) -> Path:
    """Resolve `path` (symlinks included) and insist it lies under an allowed root."""
    if not path or "\x00" in path:
        raise RuleError("Give the absolute path of a git repository on the server.")
    candidate = Path(path)
    if not candidate.is_absolute():
        raise RuleError("The local path must be absolute.")
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        raise RuleError(f"{path} does not exist on the server.") from None
    roots = [Path(root).resolve() for root in settings.QUORUM_LOCAL_REPO_ROOTS]
    if not any(resolved == root or resolved.is_relative_to(root) for root in roots):
        allowed = ", ".join(str(r) for r in roots) or "(none configured)"
        raise RuleError(
            f"{path} is outside the directories allowed for local repositories: {allowed}. "
            "An administrator of the server sets them with QUORUM_LOCAL_REPO_ROOTS."
        )
    if not resolved.is_dir() or not ((resolved / ".git").exists() or (resolved / "HEAD").is_file()):
        raise RuleError(f"{path} is not a git repository.")
    return resolved


def repository_connect(
    *,
    workspace: Workspace,
    actor: Any,
    kind: str,
    name: str,
    base_branch: str = "main",
    auto_review: bool = False,
    request: Any = None,
) -> Repository:
    branch = rules.clean_branch(base_branch or "main")
    if kind == Repository.Kind.GITHUB:
        fields = {"full_name": rules.clean_github_name(name)}
    elif kind == Repository.Kind.LOCAL:
        fields = {"local_path": str(resolve_local_repository(name))}
    else:
        raise RuleError(f"Unknown repository kind {kind!r}; use github or local.")
    with transaction.atomic():
        if Repository.objects.filter(workspace=workspace, kind=kind, **fields).exists():
            raise RuleError(f"{next(iter(fields.values()))} is already connected.")
        repo = Repository.objects.create(
            workspace=workspace, kind=kind, base_branch=branch, auto_review=auto_review, **fields
        )
        audit_record(
            action="repositories.connected",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target.of(repo),
            payload={"before": None, "after": repo.snapshot()},
            request=request,
        )
    return repo


def repository_update(
    *,
    repository: Repository,
    actor: Any,
    base_branch: str | None = None,
    auto_review: bool | None = None,
    request: Any = None,
) -> Repository:
    with transaction.atomic():
        repo = Repository.objects.select_for_update().get(pk=repository.pk)
        before = repo.snapshot()
        if base_branch is not None:
            repo.base_branch = rules.clean_branch(base_branch)
        if auto_review is not None:
            repo.auto_review = auto_review
        if repo.snapshot() == before:
            return repo
        repo.save(update_fields=["base_branch", "auto_review"])
        audit_record(
            action="repositories.updated",
            actor=Actor.of(actor),
            workspace=repo.workspace,
            target=Target.of(repo),
            payload={"before": before, "after": repo.snapshot()},
            request=request,
        )
    return repo


def repository_remove(*, repository: Repository, actor: Any, request: Any = None) -> None:
    with transaction.atomic():
        audit_record(
            action="repositories.removed",
            actor=Actor.of(actor),
            workspace=repository.workspace,
            target=Target.of(repository),
            payload={"before": repository.snapshot(), "after": None},
            request=request,
        )
        repository.delete()


# API tokens ---------------------------------------------------------------------------------


def api_token_create(*, user: Any, name: str, request: Any = None) -> tuple[ApiToken, str]:
    """Create a personal token; returns it with the secret, which is never stored or shown again."""
    name = name.strip()
    if not name:
        raise RuleError("Give the token a name, so you can recognise it later.")
    secret = settings.QUORUM_API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=user, name=name[:100], prefix=secret[:10], digest=ApiToken.digest_of(secret)
        )
        audit_record(
            action="tokens.created",
            actor=Actor.of(user),
            target=Target.of(token),
            payload={"name": token.name, "prefix": token.prefix},
            request=request,
        )
    return token, secret


def api_token_revoke(*, token: ApiToken, actor: Any, request: Any = None) -> ApiToken:
    with transaction.atomic():
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
    """The user behind a live token, or None. Lookup by digest: constant work per request."""
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
    return token.user
