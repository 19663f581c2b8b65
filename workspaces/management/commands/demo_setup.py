"""Create (or refresh) the demo workspace and its three users; print how to log in."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from workspaces import services
from workspaces.models import Membership, Workspace

DEMO_USERS = [
    ("admin@example.com", "owner"),
    ("approver@example.com", "approver"),
    ("reviewer@example.com", "reviewer"),
]


class Command(BaseCommand):
    help = "Create the demo workspace with admin, approver and reviewer users."

    def add_arguments(self, parser):
        parser.add_argument("--password", help="password for the demo users (default: random)")

    def handle(self, *args, password: str | None = None, **options):
        password = password or secrets.token_urlsafe(9)
        User = get_user_model()
        with transaction.atomic():
            users = {}
            for email, _role in DEMO_USERS:
                user, _ = User.objects.get_or_create(username=email, defaults={"email": email})
                user.set_password(password)
                user.save()
                users[email] = user
            workspace = Workspace.objects.filter(slug="demo").first()
            if workspace is None:
                workspace = services.workspace_create(
                    name="Demo", slug="demo", owner=users["admin@example.com"]
                )
            for email, role in DEMO_USERS:
                Membership.objects.get_or_create(
                    workspace=workspace, user=users[email], defaults={"role": role}
                )
        self.stdout.write(self.style.SUCCESS("Demo workspace ready: http://127.0.0.1:8000/"))
        for email, role in DEMO_USERS:
            self.stdout.write(f"  {email:<24} {role:<9} password: {password}")
