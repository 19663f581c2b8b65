"""Inviting members, changing roles, removing them; the last owner stays."""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from workspaces import services
from workspaces.models import Invitation, Membership
from workspaces.rules import RuleError


@pytest.fixture
def owner_membership(workspace, alice):
    return Membership.objects.select_related("workspace", "user").get(
        workspace=workspace, user=alice
    )


def test_it_refuses_the_last_owner_being_demoted_or_removed(owner_membership):
    with pytest.raises(RuleError, match="last owner"):
        services.member_change_role(
            actor=owner_membership, membership=owner_membership, role="admin"
        )
    with pytest.raises(RuleError, match="last owner"):
        services.member_remove(actor=owner_membership, membership=owner_membership)
    owner_membership.refresh_from_db()
    assert owner_membership.role == "owner"


def test_it_lets_an_owner_step_down_once_another_owner_exists(
    owner_membership, workspace, member_factory
):
    member_factory(workspace, "owner", "olga@example.com")
    services.member_change_role(actor=owner_membership, membership=owner_membership, role="admin")
    owner_membership.refresh_from_db()
    assert owner_membership.role == "admin"
    event = AuditEvent.objects.get(workspace=workspace, action="members.role_changed")
    assert event.payload == {"before": "owner", "after": "admin"}


def test_an_admin_cannot_create_or_touch_owners(workspace, member_factory, owner_membership):
    admin_user = member_factory(workspace, "admin", "adam@example.com")
    admin = Membership.objects.select_related("workspace").get(user=admin_user)
    with pytest.raises(RuleError, match="Only an owner"):
        services.member_invite(actor=admin, email="x@example.com", role="owner")
    with pytest.raises(RuleError, match="Only an owner"):
        services.member_remove(actor=admin, membership=owner_membership)
    viewer = Membership.objects.get(user=member_factory(workspace, "viewer"))
    with pytest.raises(RuleError, match="Only an owner"):
        services.member_change_role(actor=admin, membership=viewer, role="owner")


def test_the_members_page_changes_a_role_and_reports_rule_errors(
    workspace, alice, client_for, member_factory
):
    bob = member_factory(workspace, "viewer", "bob@example.com")
    bob_m = Membership.objects.get(user=bob)
    client = client_for(alice)
    url = f"/w/{workspace.slug}/settings/members/{bob_m.pk}/"
    client.post(url, {"action": "role", "role": "approver"})
    bob_m.refresh_from_db()
    assert bob_m.role == "approver"

    alice_m = Membership.objects.get(user=alice)
    response = client.post(
        f"/w/{workspace.slug}/settings/members/{alice_m.pk}/",
        {"action": "remove", "confirm": "yes"},
        follow=True,
    )
    assert "The last owner cannot be removed or demoted." in response.content.decode()
    assert Membership.objects.filter(pk=alice_m.pk).exists()


def test_the_api_rejects_an_unknown_role(workspace, alice, client_for):
    response = client_for(alice).post(
        f"/api/v1/workspaces/{workspace.slug}/members",
        {"email": "e@example.com", "role": "emperor"},
        content_type="application/json",
    )
    assert response.status_code == 422
    assert not Invitation.objects.exists()


def test_it_cannot_reach_a_membership_of_another_workspace(
    workspace, alice, client_for, workspace_factory
):
    other = workspace_factory("Other")
    foreign = Membership.objects.get(workspace=other)
    response = client_for(alice).delete(f"/api/v1/workspaces/{workspace.slug}/members/{foreign.pk}")
    assert response.status_code == 404
    assert Membership.objects.filter(pk=foreign.pk).exists()
