"""`python manage.py review SOURCE`: a whole review from the command line.

SOURCE is a local git repository (with --head, and --base defaulting to the repository's base
branch) or a GitHub pull request URL. Progress goes to stderr; the report (or JSON) to stdout.

Exit codes: 0 Ship, 3 Hold, 4 Block; 1 an error (the message says which); 2 bad arguments.

The embedded database is migrated on first use. The round's checkout lives under Quorum's own
worktree root and is removed when the command ends, however it ends.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from reviews.pipeline.runner import run_inline
from reviews.reports.json_export import review_json, review_sarif
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page
from reviews.services.requests import ReviewRequestError, review_request
from reviews.services.worktrees import worktree_manager
from workspaces import rules
from workspaces.models import Membership, Repository, Workspace
from workspaces.rules import RuleError
from workspaces.services import repository_connect, user_ensure, workspace_create

EXIT = {"ship": 0, "hold": 3, "block": 4}
PR_URL = re.compile(r"^https?://[^/]+/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)/pull/(?P<number>\d+)/?$")
CLI_EMAIL = "cli@quorum.local"


EXAMPLES = """examples:
  manage.py review ~/src/app --base main --head my-branch
  manage.py review ~/src/app --head HEAD --tier thorough --format json > review.json
  manage.py review https://github.com/acme/app/pull/42 --request "Add CSV export"

exit codes: 0 Ship, 3 Hold, 4 Block, 1 error, 2 bad arguments
"""


class Command(BaseCommand):
    help = "Review a local repository (--base/--head) or a GitHub pull request URL."

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(
            prog_name, subcommand, epilog=EXAMPLES, formatter_class=argparse.RawTextHelpFormatter
        )
        return parser

    def add_arguments(self, parser):
        parser.add_argument("source", help="a local git repository path, or a GitHub PR URL")
        parser.add_argument("--base", default="", help="base ref (local source)")
        parser.add_argument("--head", default="", help="head ref (local source)")
        parser.add_argument("--workspace", default="", help="workspace slug (default: 'local')")
        parser.add_argument("--tier", choices=[t.value for t in rules.Tier], default=None)
        parser.add_argument("--format", choices=["markdown", "json", "sarif"], default="markdown")
        parser.add_argument(
            "--request", default="", help="the original request, for the requirements reviewer"
        )

    def handle(self, *args, source, base, head, workspace, tier, format, request, **options):
        self._migrated()
        ws, actor = self._workspace(workspace)
        repository, number = self._repository(ws, actor, source, head)
        try:
            # The command runs the pipeline itself, in this process: nothing is queued.
            review_round = review_request(
                repository=repository,
                actor=actor,
                number=number,
                base=base,
                head=head,
                tier=tier,
                original_request=request,
                queue=False,
            )
        except ReviewRequestError as exc:
            raise CommandError(str(exc)) from exc

        def progress(stage: str) -> None:
            sys.stderr.write(f"… {stage or 'queued'}\n")

        try:
            review_round = run_inline(review_round.pk, on_progress=progress)
        finally:
            # Success, failure or Ctrl-C: nothing of this review stays on disk but its rows.
            worktree_manager().cleanup(review_round.space_id, review_round.number)
        page = review_page(space=review_round.space)
        if format == "json":
            self.stdout.write(json.dumps(review_json(page), indent=2))
        elif format == "sarif":
            self.stdout.write(json.dumps(review_sarif(page), indent=2))
        else:
            self.stdout.write(report_markdown(page))
        if review_round.state != review_round.State.FINISHED or page.verdict is None:
            raise CommandError(
                f"The review did not finish: {review_round.error or review_round.state}"
            )
        sys.stderr.write(f"verdict: {page.verdict.level} ({page.verdict.rule})\n")
        sys.exit(EXIT[page.verdict.level])

    def _migrated(self) -> None:
        """The embedded database is brought up to date on first use; a server's database is
        the operator's to migrate, so the command says what to run instead of doing it."""
        connection = connections[DEFAULT_DB_ALIAS]
        executor = MigrationExecutor(connection)
        if not executor.migration_plan(executor.loader.graph.leaf_nodes()):
            return
        if not settings.EMBEDDED:
            raise CommandError(
                "The database has unapplied migrations: run `python manage.py migrate` first."
            )
        sys.stderr.write("… preparing the embedded database (first use)\n")
        call_command("migrate", interactive=False, verbosity=0)

    def _workspace(self, slug: str):
        if slug:
            ws = Workspace.objects.filter(slug=slug).first()
            if ws is None:
                raise CommandError(f"No workspace {slug!r}.")
            owner = (
                Membership.objects.filter(workspace=ws, role=rules.Role.OWNER)
                .select_related("user")
                .first()
            )
            if owner is None:
                raise CommandError(f"Workspace {slug!r} has no owner to review as.")
            return ws, owner.user
        user = user_ensure(email=CLI_EMAIL)
        ws = Workspace.objects.filter(slug="local").first() or workspace_create(
            name="Local", slug="local", owner=user
        )
        return ws, user

    def _repository(
        self, ws: Workspace, actor, source: str, head: str
    ) -> tuple[Repository, int | None]:
        match = PR_URL.match(source)
        if match:
            name = f"{match['owner']}/{match['repo']}"
            return self._connected(ws, actor, Repository.Kind.GITHUB, name), int(match["number"])
        path = Path(source).expanduser().resolve()
        if not (path / ".git").exists():
            raise CommandError(
                f"{source} is neither a git repository nor a GitHub pull request URL."
            )
        if not head:
            raise CommandError("A local review needs --head (and optionally --base).")
        return self._connected(ws, actor, Repository.Kind.LOCAL, str(path)), None

    def _connected(self, ws: Workspace, actor, kind: str, name: str) -> Repository:
        """The repository as connected already, else connected now through the service (so the
        audit trail has it). The operator running this command already has the server's shell:
        the directory allow-list and the GitHub grants guard the web pages, not this command."""
        field = "full_name__iexact" if kind == Repository.Kind.GITHUB else "local_path"
        repo = Repository.objects.filter(
            workspace=ws, kind=kind, archived_at__isnull=True, **{field: name}
        ).first()
        if repo is not None:
            return repo
        try:
            return repository_connect(
                workspace=ws, actor=actor, kind=kind, name=name, operator=True
            )
        except RuleError as exc:
            raise CommandError(str(exc)) from exc
