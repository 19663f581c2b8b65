"""Invitations and memberships: who belongs to a workspace, in which role."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from guardrails.audit import Actor, Target, audit_record
from workspaces import rules
from workspaces.live_access import access_changed
from workspaces.models import (
    Invitation,
    Membership,
    Workspace,
)
from workspaces.rules import RuleError

User = get_user_model()


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
    try:
        # The invitation is mailed to it: an address no mail header can carry is refused here,
        # not after the invitation is stored.
        validate_email(email)
    except ValidationError:
        raise RuleError(f"{email!r} is not an email address.") from None
    rules.check_role_change(actor_role=actor.role, target_role=role, new_role=role, owners=2)
    with transaction.atomic(durable=True):
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
    with transaction.atomic(durable=True):
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
    with transaction.atomic(durable=True):
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
    with transaction.atomic(durable=True):
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
    with transaction.atomic(durable=True):
        invitation.delete()
        audit_record(
            action="members.invitation_revoked",
            actor=Actor.of(actor.user),
            workspace=actor.workspace,
            target=Target("user", invitation.email, invitation.email),
            payload={"email": invitation.email, "role": invitation.role},
            request=request,
        )
