"""`python manage.py token create --user EMAIL --name NAME [--agent AGENT]`: an API token from
the command line, for a person or an agent acting for them (MCP over stdio, CI jobs).

The secret is printed once, on stdout, and never stored; the token is audited like one made on
the page (`tokens.created`).
"""

from __future__ import annotations

import argparse

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from workspaces.rules import RuleError
from workspaces.services import api_token_create

EXAMPLES = """examples:
  manage.py token create --user alice@example.com --name laptop --agent claude-code
  manage.py token create --user ci@example.com --name "nightly review"
"""


class Command(BaseCommand):
    help = "Create an API token for a person, or for an agent acting for them."

    def create_parser(self, prog_name, subcommand, **kwargs):
        return super().create_parser(
            prog_name, subcommand, epilog=EXAMPLES, formatter_class=argparse.RawTextHelpFormatter
        )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="verb", required=True)
        create = sub.add_parser("create", help="create a token and print its secret once")
        create.add_argument("--user", required=True, help="the person's e-mail address")
        create.add_argument("--name", required=True, help="how the token is listed")
        create.add_argument(
            "--agent",
            default="",
            help="the agent's name (e.g. claude-code): the token acts as that agent for the "
            "person, with at most a reviewer's role",
        )

    def handle(self, *args, verb: str, user: str, name: str, agent: str, **options):
        person = get_user_model().objects.filter(email__iexact=user.strip()).first()
        if person is None:
            raise CommandError(f"No user with the address {user!r}.")
        try:
            token, secret = api_token_create(user=person, name=name, agent_name=agent)
        except RuleError as exc:
            raise CommandError(str(exc)) from exc
        who = f"agent {token.agent_name} for {person.email}" if token.agent_name else person.email
        self.stderr.write(f"Token {token.prefix}… for {who}; the secret is shown only now:")
        self.stdout.write(secret)
