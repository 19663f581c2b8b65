"""Grant the application's database role what it needs, and nothing that could erase the trail.

Run as the role that owns the tables (the one migrations run as), after `migrate`:

    python manage.py audit_grants --app-role quorum_app           # apply
    python manage.py audit_grants --app-role quorum_app --sql     # only print the SQL

The application role gets SELECT/INSERT/UPDATE/DELETE on every table (and the tables later
migrations create, through default privileges), except: on the audit table only SELECT and
INSERT, on the chain heads SELECT, INSERT and UPDATE. It must not own the tables, be a
superuser or be a member of the owner role: an owner can disable the append-only triggers.
"""

from __future__ import annotations

import re

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from guardrails.models import AuditChainHead, AuditEvent

_ROLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def grant_statements(*, role: str, schema: str) -> list[str]:
    q = connection.ops.quote_name
    r, s = q(role), q(schema)
    audit, head = f"{s}.{q(AuditEvent._meta.db_table)}", f"{s}.{q(AuditChainHead._meta.db_table)}"
    return [
        f"GRANT USAGE ON SCHEMA {s} TO {r}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {r}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {r}",
        # Tables created later by this (owner) role: the same DML, never TRUNCATE or TRIGGER.
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT USAGE, SELECT ON SEQUENCES TO {r}",
        f"REVOKE ALL ON {audit} FROM PUBLIC",
        f"REVOKE ALL ON {audit} FROM {r}",
        f"GRANT SELECT, INSERT ON {audit} TO {r}",
        f"REVOKE ALL ON {head} FROM PUBLIC",
        f"REVOKE ALL ON {head} FROM {r}",
        f"GRANT SELECT, INSERT, UPDATE ON {head} TO {r}",
    ]


class Command(BaseCommand):
    help = "Grant the application role INSERT/SELECT only on the audit table (run as owner)."

    def add_arguments(self, parser):
        parser.add_argument("--app-role", required=True, help="the role the app connects as")
        parser.add_argument("--sql", action="store_true", help="print the SQL, change nothing")

    def handle(self, *args, app_role: str, sql: bool = False, **options):
        if connection.vendor != "postgresql":
            raise CommandError("audit_grants needs PostgreSQL (the embedded default has no roles)")
        if not _ROLE.match(app_role):
            raise CommandError(f"not a plain role name: {app_role!r}")
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_schema()")
            (schema,) = cursor.fetchone()
        statements = grant_statements(role=app_role, schema=schema)
        if sql:
            self.stdout.write(";\n".join(statements) + ";")
            return
        self._refuse_unsafe(app_role)
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
        self.stdout.write(
            f"{app_role}: SELECT, INSERT on {AuditEvent._meta.db_table}; "
            f"SELECT, INSERT, UPDATE on {AuditChainHead._meta.db_table}; DML elsewhere."
        )

    def _refuse_unsafe(self, role: str) -> None:
        table = AuditEvent._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [role])
            row = cursor.fetchone()
            if row is None:
                raise CommandError(f"no role {role!r}: create it first (CREATE ROLE … LOGIN)")
            if row[0]:
                raise CommandError(f"{role} is a superuser: it could disable the audit triggers")
            cursor.execute(
                "SELECT pg_get_userbyid(c.relowner), pg_has_role(%s, c.relowner, 'MEMBER'), "
                "pg_has_role(current_user, c.relowner, 'MEMBER') "
                "FROM pg_class c WHERE c.oid = to_regclass(%s)",
                [role, table],
            )
            owner, app_is_owner, we_are_owner = cursor.fetchone()
        if app_is_owner:
            raise CommandError(
                f"{role} owns {table} (or is a member of its owner {owner}): it could disable "
                "the audit triggers. Let a separate role own the schema and run migrations."
            )
        if not we_are_owner:
            raise CommandError(f"run this as the owner of {table} ({owner})")
