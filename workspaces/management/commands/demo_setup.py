"""Create (or refresh) the demo workspace and its three users; print how to log in."""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from reviews.models import ReviewSpace
from reviews.pipeline.runner import run_inline
from reviews.services.requests import review_request
from reviews.sources.sample_repo import create_sample_repository
from workspaces import services
from workspaces.models import Repository, Workspace

SAMPLE_REQUEST = "Add product search, an export of the product list, and a way to delete orders."
DEMO_USERS = [
    ("admin@example.com", "owner"),
    ("approver@example.com", "approver"),
    ("reviewer@example.com", "reviewer"),
]


class Command(BaseCommand):
    help = "Create the demo workspace with admin, approver and reviewer users."

    def add_arguments(self, parser):
        parser.add_argument("--password", help="password for the demo users (default: random)")
        parser.add_argument(
            "--no-review", action="store_true", help="skip the sample repository and its review"
        )
        parser.add_argument(
            "--port", type=int, default=8000, help="the port the demo is served on (links)"
        )

    def handle(
        self,
        *args,
        password: str | None = None,
        no_review: bool = False,
        port: int = 8000,
        **options,
    ):
        self.site = f"http://127.0.0.1:{port}"
        password = password or secrets.token_urlsafe(9)
        with transaction.atomic():
            users = {}
            for email, _role in DEMO_USERS:
                users[email] = services.user_ensure(email=email, password=password)
            workspace = Workspace.objects.filter(slug="demo").first()
            if workspace is None:
                workspace = services.workspace_create(
                    name="Demo", slug="demo", owner=users["admin@example.com"]
                )
            for email, role in DEMO_USERS:
                services.member_add(workspace=workspace, user=users[email], role=role)
        if not no_review:
            self._sample_review(workspace, users["admin@example.com"])
        self.stdout.write(self.style.SUCCESS(f"Demo workspace ready: {self.site}/"))
        for email, role in DEMO_USERS:
            self.stdout.write(f"  {email:<24} {role:<9} password: {password}")

    def _sample_review(self, workspace: Workspace, owner) -> None:
        """A sample repository with real defects, reviewed once (offline analyzers, and the
        model when QUORUM_LLM_* is set)."""

        root = Path(settings.QUORUM_LOCAL_REPO_ROOTS[0])
        path = (root / "shop").resolve()
        base, head = create_sample_repository(path)
        repo = Repository.objects.filter(workspace=workspace, local_path=str(path)).first()
        if repo is None:
            # The demo runs as the server's operator: it grants its own workspace the root.
            services.local_root_grant(workspace=workspace, path=str(root))
            repo = services.repository_connect(
                workspace=workspace, actor=owner, kind="local", name=str(path)
            )
        if ReviewSpace.objects.filter(pull_request__repository=repo).exists():
            return
        self.stdout.write(f"Reviewing {head} against {base} in {repo} …")
        review_round = review_request(
            repository=repo,
            actor=owner,
            base=base,
            head=head,
            original_request=SAMPLE_REQUEST,
            queue=False,
        )
        review_round = run_inline(review_round.pk)
        verdict = getattr(review_round, "verdict", None)
        self.stdout.write(
            f"  verdict: {verdict.level if verdict else review_round.state} — "
            f"{self.site}/w/{workspace.slug}/reviews/{review_round.space_id}/"
        )
