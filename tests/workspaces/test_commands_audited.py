"""Management commands change rows only through the services, so the audit trail records
what they do the way it records the pages."""

from __future__ import annotations

import subprocess
from io import StringIO

from django.core.management import call_command

from guardrails.models import AuditEvent
from workspaces.models import Repository


def _actions(**filters) -> list[str]:
    return list(
        AuditEvent.objects.filter(**filters).order_by("seq").values_list("action", flat=True)
    )


def test_demo_setup_leaves_the_audit_events_of_what_it_creates(db):
    call_command("demo_setup", "--password", "demo-pass-123", "--no-review", stdout=StringIO())
    created = _actions(action__startswith="tenancy.user_created")
    assert len(created) == 3  # admin, approver, reviewer
    demo = _actions(workspace__slug="demo")
    assert demo[0] == "workspace.created"
    assert demo.count("tenancy.member_added") == 2  # the owner came with the workspace
    # Run again: nothing new is created, and the unchanged passwords are not set again.
    before = AuditEvent.objects.count()
    call_command("demo_setup", "--password", "demo-pass-123", "--no-review", stdout=StringIO())
    assert AuditEvent.objects.count() == before
    call_command("demo_setup", "--password", "another-pass", "--no-review", stdout=StringIO())
    assert _actions(action="tenancy.user_password_set").count("tenancy.user_password_set") == 3
    assert "another-pass" not in str(list(AuditEvent.objects.values_list("payload", flat=True)))


def test_the_review_command_connects_through_the_service(workspace, alice, tmp_path):
    from reviews.management.commands.review import Command

    command = Command()
    repo, number = command._repository(workspace, alice, "https://github.com/acme/app/pull/5", "")
    assert (repo.full_name, number) == ("acme/app", 5)
    event = AuditEvent.objects.get(action="repositories.connected", target_id=str(repo.pk))
    assert event.payload["operator"] is True and event.actor_label == alice.email
    # Asked again, the connected repository is used as it is.
    again, _ = command._repository(workspace, alice, "https://github.com/acme/app/pull/6", "")
    assert again.pk == repo.pk
    assert AuditEvent.objects.filter(action="repositories.connected").count() == 1

    local = tmp_path / "somewhere-ungranted"
    local.mkdir()
    subprocess.run(["git", "init", "-q", str(local)], check=True)
    repo, number = command._repository(workspace, alice, str(local), "HEAD")
    assert number is None and repo.kind == Repository.Kind.LOCAL
    assert repo.local_path == str(local.resolve())
    assert AuditEvent.objects.filter(
        action="repositories.connected", target_id=str(repo.pk)
    ).exists()


def test_the_tenancy_command_is_audited(workspace):
    call_command("tenancy", "grant-repository", workspace.slug, "acme/granted", stdout=StringIO())
    assert _actions(workspace=workspace, action__startswith="tenancy.") == [
        "tenancy.repository_granted"
    ]
