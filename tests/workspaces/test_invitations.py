"""Invitations need their owner: a signed, single-use, expiring link, accepted explicitly by the
signed-in, verified owner of the address. Nothing is granted at sign-up."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.utils import timezone

from guardrails.models import AuditEvent
from workspaces import services
from workspaces.models import Invitation, Membership
from workspaces.rules import RuleError


@pytest.fixture
def owner_membership(workspace, alice):
    return Membership.objects.select_related("workspace", "user").get(
        workspace=workspace, user=alice
    )


@pytest.fixture
def invite(owner_membership, django_capture_on_commit_callbacks):
    def make(email: str, role: str = "approver") -> str:
        with django_capture_on_commit_callbacks(execute=True):
            services.member_invite(actor=owner_membership, email=email, role=role)
        link = re.search(r"(/invitations/[^\s]+/)", mail.outbox[-1].body).group(1)
        assert mail.outbox[-1].to == [email.lower()]
        return link

    return make


def _verified(user, verified=True):
    EmailAddress.objects.update_or_create(
        user=user, email=user.email, defaults={"verified": verified, "primary": True}
    )
    return user


def test_inviting_an_existing_account_grants_nothing_until_accepted(
    invite, user_factory, workspace, client
):
    bob = _verified(user_factory("bob@example.com"))
    link = invite("Bob@Example.com")
    assert not Membership.objects.filter(workspace=workspace, user=bob).exists()
    assert Invitation.objects.get(workspace=workspace).email == "bob@example.com"
    client.force_login(bob)
    page = client.get(link)
    assert page.status_code == 200 and b"Accept and join" in page.content
    assert client.post(link).status_code == 302
    assert Membership.objects.get(workspace=workspace, user=bob).role == "approver"
    assert AuditEvent.objects.filter(action="members.invitation_accepted").count() == 1
    # Single use: the same link does nothing a second time.
    again = client.post(link)
    assert again.status_code == 400 and b"not valid" in again.content


def test_an_unverified_sign_up_cannot_take_the_invitation(invite, workspace, client, settings):
    settings.QUORUM_OPEN_SIGNUP = True
    link = invite("dana@example.com")
    client.post(
        "/accounts/signup/",
        {"email": "dana@example.com", "password1": "a-long-pass-1", "password2": "a-long-pass-1"},
    )
    dana = Membership._meta.get_field("user").related_model.objects.get(email="dana@example.com")
    assert not Membership.objects.filter(workspace=workspace, user=dana).exists()  # not at sign-up
    client.force_login(dana)
    refused = client.post(link)
    assert refused.status_code == 400 and b"Verify dana@example.com first" in refused.content
    assert not Membership.objects.filter(workspace=workspace, user=dana).exists()
    _verified(dana)
    assert client.post(link).status_code == 302
    assert Membership.objects.filter(workspace=workspace, user=dana).exists()


def test_someone_else_cannot_use_a_forwarded_link(invite, user_factory, workspace, client):
    link = invite("erin@example.com")
    mallory = _verified(user_factory("mallory@example.com"))
    client.force_login(mallory)
    refused = client.post(link)
    assert (
        refused.status_code == 400 and b"This invitation is for erin@example.com" in refused.content
    )
    assert not Membership.objects.filter(workspace=workspace, user=mallory).exists()


def test_expired_tampered_and_revoked_links_are_refused(
    invite, user_factory, workspace, client, owner_membership
):
    frank = _verified(user_factory("frank@example.com"))
    link = invite("frank@example.com")
    client.force_login(frank)
    assert client.post(link[:-3] + "xx/").status_code == 400
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert b"expired" in client.post(link).content
    services.invitation_revoke(actor=owner_membership, invitation=Invitation.objects.get())
    link = invite("frank@example.com")  # a fresh invitation, a fresh link
    Invitation.objects.all().delete()
    assert b"not valid" in client.post(link).content
    assert not Membership.objects.filter(workspace=workspace, user=frank).exists()


def test_inviting_a_member_again_is_refused(invite, owner_membership):
    with pytest.raises(Exception, match="already a member"):
        services.member_invite(
            actor=owner_membership, email=owner_membership.user.email, role="viewer"
        )


@pytest.mark.parametrize("email", ["\u0095@\U000f913f\u00ab", "bob@", "@example.com", "a b@c.d"])
def test_an_address_no_mail_can_carry_is_refused_before_anything_is_stored(
    email, owner_membership, django_capture_on_commit_callbacks, settings
):
    # The console backend renders the message as a mail server would receive it.
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuleError, match="is not an email address"),
    ):
        services.member_invite(actor=owner_membership, email=email, role="viewer")
    assert not Invitation.objects.exists()
