"""Every write to workspace state, one function per change, each audited."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import send_mail
from django.db import IntegrityError, models, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from guardrails.audit import SYSTEM, Actor, Target, audit_record
from workspaces import rules
from workspaces.defaults import DEFAULT_REVIEWERS
from workspaces.live_access import access_changed
from workspaces.models import (
    ApiToken,
    GitHubInstallation,
    Invitation,
    LocalRootGrant,
    Membership,
    Repository,
    RepositoryGrant,
    ReviewerConfig,
    Tombstone,
    Workspace,
)
from workspaces.rules import Perm, RuleError

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


INVITATION_SALT = "quorum.invitation"


def invitation_link_token(invitation: Invitation) -> str:
    return signing.dumps({"i": invitation.pk, "n": invitation.nonce}, salt=INVITATION_SALT)


def _send_invitation(invitation: Invitation, request: Any) -> None:
    path = reverse("workspaces:invitation_accept", args=[invitation_link_token(invitation)])
    link = request.build_absolute_uri(path) if request is not None else path
    inviter = invitation.invited_by.email if invitation.invited_by else "An administrator"
    send_mail(
        subject=f"You are invited to {invitation.workspace.name} on Quorum",
        message=(
            f"{inviter} invited {invitation.email} to the workspace "
            f"{invitation.workspace.name} as {invitation.role}.\n\n"
            f"Accept it here (sign in with this address first; it must be verified):\n{link}\n\n"
            f"The link works once and expires on {invitation.expires_at:%Y-%m-%d %H:%M} UTC."
        ),
        from_email=None,
        recipient_list=[invitation.email],
    )


def member_invite(*, actor: Membership, email: str, role: str, request: Any = None) -> Invitation:
    """Invite an address, whether or not it has an account: nothing is granted until the
    verified owner of the address accepts the signed link sent to it."""
    workspace = actor.workspace
    email = User.objects.normalize_email(email.strip()).lower()
    if "@" not in email:
        raise RuleError(f"{email!r} is not an email address.")
    rules.check_role_change(actor_role=actor.role, target_role=role, new_role=role, owners=2)
    with transaction.atomic():
        if Membership.objects.filter(workspace=workspace, user__email__iexact=email).exists():
            raise RuleError(f"{email} is already a member.")
        try:
            with transaction.atomic():
                invitation = Invitation.objects.create(
                    workspace=workspace, email=email, role=role, invited_by=actor.user
                )
        except IntegrityError:
            raise RuleError(f"{email} has already been invited.") from None
        audit_record(
            action="members.invited",
            actor=Actor.of(actor.user),
            workspace=workspace,
            target=Target("user", email, email),
            payload={"email": email, "role": role, "expires_at": invitation.expires_at.isoformat()},
            request=request,
        )
        transaction.on_commit(lambda: _send_invitation(invitation, request))
    return invitation


def invitation_from_token(token: str) -> Invitation:
    """The invitation a link names, if the link is genuine, unused and unexpired."""
    try:
        data = signing.loads(
            token, salt=INVITATION_SALT, max_age=settings.QUORUM_INVITATION_DAYS * 86400
        )
        invitation = Invitation.objects.select_related("workspace").get(pk=int(data["i"]))
    except (signing.BadSignature, KeyError, TypeError, ValueError, Invitation.DoesNotExist):
        raise RuleError("This invitation link is not valid (used, revoked or mistyped).") from None
    if not secrets.compare_digest(str(data.get("n", "")), invitation.nonce):
        raise RuleError("This invitation link is not valid (used, revoked or mistyped).")
    if invitation.expires_at <= timezone.now():
        raise RuleError("This invitation has expired: ask for a new one.")
    return invitation


def invitation_check_recipient(invitation: Invitation, user: Any) -> None:
    """Only the signed-in owner of the invited address, verified, may accept."""
    from allauth.account.models import EmailAddress

    if not getattr(user, "is_authenticated", False):
        raise RuleError("Sign in to accept the invitation.")
    owns = EmailAddress.objects.filter(user=user, email__iexact=invitation.email)
    if not owns.exists() and user.email.lower() != invitation.email.lower():
        raise RuleError(
            f"This invitation is for {invitation.email}; you are signed in as {user.email}."
        )
    if not owns.filter(verified=True).exists():
        raise RuleError(
            f"Verify {invitation.email} first (a confirmation link was sent when you signed up; "
            "you can send it again from your account's email page), then open this link again."
        )


def invitation_accept(*, token: str, user: Any, request: Any = None) -> Membership:
    with transaction.atomic():
        invitation = invitation_from_token(token)
        invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
        invitation_check_recipient(invitation, user)
        if Membership.objects.filter(workspace=invitation.workspace, user=user).exists():
            raise RuleError(f"You are already a member of {invitation.workspace.name}.")
        membership = Membership.objects.create(
            workspace=invitation.workspace, user=user, role=invitation.role
        )
        invitation.delete()  # single use
        audit_record(
            action="members.invitation_accepted",
            actor=Actor.of(user),
            workspace=invitation.workspace,
            target=Target("user", str(user.pk), user.email),
            payload={"email": invitation.email, "role": invitation.role},
            request=request,
        )
    return membership


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


def _local_roots(workspace: Workspace) -> list[Path]:
    """Where this workspace may connect local repositories: the roots a server operator granted
    it, within the server-wide fence QUORUM_LOCAL_REPO_ROOTS. A single-tenant install
    (QUORUM_SHARED_LOCAL_ROOTS, the embedded default) grants the whole fence to everyone."""
    fence = [Path(root).resolve() for root in settings.QUORUM_LOCAL_REPO_ROOTS]
    if settings.QUORUM_SHARED_LOCAL_ROOTS:
        return fence
    granted = [Path(p) for p in workspace.local_root_grants.values_list("path", flat=True)]
    return [g for g in granted if any(g == f or g.is_relative_to(f) for f in fence)]


def resolve_local_repository(path: str, workspace: Workspace) -> Path:
    """Resolve `path` (symlinks included) and insist it lies under a root granted to
    `workspace`."""
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
    if not any(resolved == root or resolved.is_relative_to(root) for root in roots):
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
    from reviews.services.github import (
        github_app_mode,
        github_configured,
        repository_installation,
    )
    from reviews.sources.github_client import GitHubError

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
) -> Repository:
    branch = rules.clean_branch(base_branch or "main")
    if kind == Repository.Kind.GITHUB:
        fields = {"full_name": rules.clean_github_name(name)}
        check_github_access(workspace, fields["full_name"])
    elif kind == Repository.Kind.LOCAL:
        fields = {"local_path": str(resolve_local_repository(name, workspace))}
    else:
        raise RuleError(f"Unknown repository kind {kind!r}; use github or local.")
    with transaction.atomic():
        existing = (
            Repository.objects.select_for_update()
            .filter(workspace=workspace, kind=kind, **fields)
            .first()
        )
        if existing is not None and existing.archived_at is None:
            raise RuleError(f"{next(iter(fields.values()))} is already connected.")
        if existing is not None:
            return _repository_restore(
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
            payload={"before": None, "after": repo.snapshot()},
            request=request,
        )
    return repo


# Server operator grants (tenancy) -------------------------------------------------------------


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


def repository_update(
    *,
    repository: Repository,
    actor: Any,
    base_branch: str | None = None,
    auto_review: bool | None = None,
    review_drafts: bool | None = None,
    request: Any = None,
) -> Repository:
    with transaction.atomic():
        repo = Repository.objects.select_for_update().get(pk=repository.pk)
        before = repo.snapshot()
        if base_branch is not None:
            repo.base_branch = rules.clean_branch(base_branch)
        if auto_review is not None:
            repo.auto_review = auto_review
        if review_drafts is not None:
            repo.review_drafts = review_drafts
        if repo.snapshot() == before:
            return repo
        repo.save(update_fields=["base_branch", "auto_review", "review_drafts"])
        audit_record(
            action="repositories.updated",
            actor=Actor.of(actor),
            workspace=repo.workspace,
            target=Target.of(repo),
            payload={"before": before, "after": repo.snapshot()},
            request=request,
        )
    return repo


def repository_footprint(repository: Repository) -> dict[str, int]:
    """What a repository's reviews hold: what disconnecting keeps and deleting removes."""
    from reviews.models import NodeConfirmation, ReviewNode, ReviewRound, ReviewSpace

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
    from reviews.models import ReviewRound
    from reviews.services.rounds import RoundError, round_cancel

    with transaction.atomic():
        repo = Repository.objects.select_for_update().get(pk=repository.pk)
        if repo.archived_at is not None:
            raise RuleError(f"{repo} is already disconnected.")
        before = repo.snapshot()
        repo.archived_at = timezone.now()
        repo.save(update_fields=["archived_at"])
        open_rounds = ReviewRound.objects.filter(
            space__pull_request__repository=repo,
            state__in=[ReviewRound.State.PENDING, ReviewRound.State.RUNNING],
        ).select_related("space__workspace", "space__pull_request")
        cancelled = 0
        for review_round in open_rounds:
            try:
                round_cancel(review_round=review_round, actor=actor, request=request)
            except RoundError:  # it ended on its own meanwhile
                continue
            cancelled += 1
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


def _repository_restore(
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
    from reviews.models import ReviewSpace

    if not rules.role_allows(actor.role, Perm.DELETE_REVIEWS):
        raise RuleError("Only an owner can delete a repository's reviews for good.")
    with transaction.atomic():
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
        from guardrails.services import approvals_cancel_for

        cancelled = approvals_cancel_for(
            workspace=repo.workspace,
            target_type="reviewspace",
            target_ids=[str(s.pk) for s in spaces],
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
