from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from guardrails.audit import chain_name
from guardrails.selectors import audit_chains
from guardrails.verification import chain_verify
from workspaces.models import Workspace


class Command(BaseCommand):
    help = (
        "Verify the audit hash chains from their first entry against their sealed heads; "
        "exit 1 naming the first break."
    )

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
            status = chain_verify(chain=chain)
            broken = status.broken
            if broken is None:
                self.stdout.write(
                    f"OK      {chain}: {status.checked} entries verified, head matches"
                )
            elif broken.event_id is not None:
                failures += 1
                self.stdout.write(
                    f"BROKEN  {chain}: entry #{broken.seq} (event id {broken.event_id}): "
                    f"{broken.reason}"
                )
            else:
                failures += 1
                self.stdout.write(f"BROKEN  {chain}: at #{broken.seq}: {broken.reason}")
        if failures:
            raise CommandError(f"{failures} audit chain(s) broken", returncode=1)
