"""Server operator grants: which workspace may reach which repositories.

  manage.py tenancy bind-installation WORKSPACE INSTALLATION_ID [--account LOGIN]
  manage.py tenancy unbind-installation INSTALLATION_ID
  manage.py tenancy grant-repository WORKSPACE OWNER/NAME
  manage.py tenancy grant-local-root WORKSPACE /absolute/dir
  manage.py tenancy list [WORKSPACE]

Whoever holds this shell operates the server; each grant is audited in the workspace's trail.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from workspaces import services
from workspaces.models import Workspace
from workspaces.rules import RuleError


class Command(BaseCommand):
    help = "Bind GitHub App installations and grant repositories or local roots to workspaces."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="verb", required=True)
        bind = sub.add_parser("bind-installation")
        bind.add_argument("workspace")
        bind.add_argument("installation_id", type=int)
        bind.add_argument("--account", default="")
        unbind = sub.add_parser("unbind-installation")
        unbind.add_argument("installation_id", type=int)
        repo = sub.add_parser("grant-repository")
        repo.add_argument("workspace")
        repo.add_argument("full_name")
        root = sub.add_parser("grant-local-root")
        root.add_argument("workspace")
        root.add_argument("path")
        listing = sub.add_parser("list")
        listing.add_argument("workspace", nargs="?")

    def handle(self, *args, verb: str, **options) -> None:
        try:
            if verb == "bind-installation":
                services.installation_bind(
                    workspace=self._workspace(options["workspace"]),
                    installation_id=options["installation_id"],
                    account_login=options["account"],
                )
            elif verb == "unbind-installation":
                services.installation_unbind(installation_id=options["installation_id"])
            elif verb == "grant-repository":
                services.repository_grant(
                    workspace=self._workspace(options["workspace"]),
                    full_name=options["full_name"],
                )
            elif verb == "grant-local-root":
                services.local_root_grant(
                    workspace=self._workspace(options["workspace"]), path=options["path"]
                )
        except RuleError as exc:
            raise CommandError(str(exc)) from exc
        self._list(options.get("workspace"))

    def _workspace(self, slug: str) -> Workspace:
        try:
            return Workspace.objects.get(slug=slug)
        except Workspace.DoesNotExist:
            raise CommandError(f"No workspace {slug!r}.") from None

    def _list(self, slug: str | None) -> None:
        workspaces = Workspace.objects.order_by("slug")
        if slug:
            workspaces = workspaces.filter(slug=slug)
        for ws in workspaces:
            self.stdout.write(f"{ws.slug}:")
            for i in ws.github_installations.all():
                self.stdout.write(f"  installation {i.installation_id} {i.account_login}")
            for g in ws.repository_grants.all():
                self.stdout.write(f"  repository {g.full_name}")
            for root in ws.local_root_grants.all():
                self.stdout.write(f"  local root {root.path}")
