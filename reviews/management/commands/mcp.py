"""`manage.py mcp --workspace SLUG`: Quorum's review tools over MCP on stdio, for a coding agent
on this machine. It acts as the owner of the API token in QUORUM_API_TOKEN (an agent's token
acts as that agent), checked again on every call."""

from __future__ import annotations

import os

import anyio
from django.core.management.base import BaseCommand, CommandError

from config.application_errors import ApplicationError
from reviews.mcp import tools
from reviews.mcp.server import build_server


class Command(BaseCommand):
    help = "Serve Quorum's review tools over MCP on stdin/stdout (token: QUORUM_API_TOKEN)."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="The workspace's slug.")

    def handle(self, *args, workspace: str, **options):
        secret = os.environ.get("QUORUM_API_TOKEN", "").strip()
        if not secret:
            raise CommandError(
                "Set QUORUM_API_TOKEN to a Quorum API token (user menu → API tokens; create "
                "it for an agent to have the agent named in the audit trail)."
            )
        try:
            tools.caller_for(secret, workspace)  # a bad token or workspace fails at start
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        # stdout carries the protocol: nothing else may write there.
        anyio.run(build_server(lambda ctx: (secret, workspace)).run_stdio_async)
