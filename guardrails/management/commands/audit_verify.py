from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from guardrails.audit import chain_name
from guardrails.selectors import audit_chain_verify, audit_chains
from workspaces.models import Workspace


class Command(BaseCommand):
    help = "Verify the audit hash chains; exit 1 naming the first broken entry."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", metavar="SLUG", help="only this workspace's chain")

    def handle(self, *args, workspace: str | None = None, **options):
        if workspace:
            ws = Workspace.objects.filter(slug=workspace).first()
            if ws is None:
                raise CommandError(f"no workspace with slug {workspace!r}")
            chains = [chain_name(ws)]
        else:
            chains = audit_chains()
        failures = 0
        for chain in chains:
            count, broken = audit_chain_verify(chain=chain)
            if broken is None:
                self.stdout.write(f"OK      {chain}: {count} entries verified")
            else:
                failures += 1
                self.stdout.write(
                    f"BROKEN  {chain}: entry #{broken.seq} (event id {broken.event_id}): "
                    f"{broken.reason}"
                )
        if failures:
            raise CommandError(f"{failures} audit chain(s) broken", returncode=1)
