"""Shared fixtures: factories and personas (alice owns, bob is a member, charlie is outside)."""

from __future__ import annotations

import itertools
import os

import pytest
from django.contrib.auth import get_user_model
from django.db.backends.postgresql.operations import DatabaseOperations as PostgresOperations

from workspaces import services

PASSWORD = "correct-horse-battery-staple"
_seq = itertools.count(1)


AUDIT_TRUNCATE_TRIGGER = "guardrails_auditevent_no_truncate"


@pytest.fixture(scope="session")
def django_db_setup(
    request,
    django_test_environment,
    django_db_blocker,
    django_db_keepdb,
    django_db_createdb,
    django_db_modify_db_settings,
):
    """pytest-django's, with two differences.

    The worker's test database is copied from a migrated template (tests/db_template.py)
    instead of migrated from nothing by every worker.

    The between-tests flush may TRUNCATE the append-only audit table, and flushes by DELETE:
    on the throw-away test database only, the suite's connection (the tables' owner) disables
    the TRUNCATE trigger. The application role cannot do the same in production: it does not
    own the table (tests/guardrails/test_audit_grants.py). The row triggers refusing UPDATE and
    DELETE stay on; tests of the TRUNCATE refusal enable its trigger inside their transaction.
    """
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    from tests.db_template import prepare_from_template

    verbosity = request.config.option.verbose
    made: list = []

    def migrate(keepdb: bool) -> None:
        # No test asks for serialized_rollback: nothing to serialize (as pytest-django decides).
        made.append(
            setup_databases(
                verbosity=verbosity, interactive=False, keepdb=keepdb, serialized_aliases=()
            )
        )

    workerinput = getattr(request.config, "workerinput", None)
    run = workerinput["testrunuid"] if workerinput else f"solo-{os.getpid()}"
    with django_db_blocker.unblock():
        prepare_from_template(connection, rebuild=django_db_createdb, run=run, migrate=migrate)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    f"ALTER TABLE guardrails_auditevent DISABLE TRIGGER {AUDIT_TRUNCATE_TRIGGER}"
                )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PostgresOperations, "sql_flush", _sql_flush_by_delete)
        yield
    if not django_db_keepdb:
        with django_db_blocker.unblock():
            try:
                teardown_databases(made[-1], verbosity=verbosity)
            except Exception as exc:
                request.node.warn(pytest.PytestWarning(f"test database teardown: {exc!r}"))


_truncate_flush = PostgresOperations.sql_flush


def _sql_flush_by_delete(self, style, tables, *, reset_sequences=False, allow_cascade=False):
    """The flush after each transactional test on PostgreSQL, with the end state of Django's
    (every table empty, sequences left as they are) at a fraction of its cost.

    Django empties the tables with one `TRUNCATE` of all of them (~60): PostgreSQL gives each
    table and index a new file, about 0.5 s per test on two cores, where a test leaves a few
    rows in a few tables. Here the same transaction takes the same ACCESS EXCLUSIVE locks as
    TRUNCATE would, then DELETEs every table (nothing to do in an empty one). Every foreign key
    is DEFERRABLE INITIALLY DEFERRED, so the order does not matter. The append-only audit table
    refuses DELETE row by row (its trigger stays on): it is truncated, alone (no foreign key
    points at it), when it has rows. The post_migrate signal then recreates content types and
    permissions as after Django's flush. Flushes that reset sequences or cascade are Django's.
    """
    if reset_sequences or allow_cascade or not tables:
        return _truncate_flush(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    audit = "guardrails_auditevent"
    quoted = ", ".join(self.quote_name(table) for table in tables)
    deletes = "".join(
        f"DELETE FROM {self.quote_name(table)};\n"  # noqa: S608 (names from introspection)
        for table in tables
        if table != audit
    )
    truncate = (
        f"IF EXISTS (SELECT 1 FROM {audit}) THEN TRUNCATE {audit}; END IF;\n"  # noqa: S608
        if audit in tables
        else ""
    )
    return [
        f"LOCK TABLE {quoted} IN ACCESS EXCLUSIVE MODE;",
        f"DO $$ BEGIN\n{truncate}{deletes}END $$;",
    ]


@pytest.fixture
def user_factory(db):
    def make(email: str | None = None, password: str = PASSWORD, **extra):
        email = email or f"user{next(_seq)}@example.com"
        return get_user_model().objects.create_user(
            username=email, email=email, password=password, **extra
        )

    return make


@pytest.fixture
def workspace_factory(db, user_factory):
    def make(name: str | None = None, owner=None):
        owner = owner or user_factory()
        return services.workspace_create(name=name or f"Workspace {next(_seq)}", owner=owner)

    return make


@pytest.fixture
def member_factory(db, user_factory):
    """Add a user with a role to a workspace, bypassing the invite flow."""
    from workspaces.models import Membership

    def make(workspace, role: str, email: str | None = None):
        user = user_factory(email)
        Membership.objects.create(workspace=workspace, user=user, role=role)
        return user

    return make


@pytest.fixture
def alice(user_factory):
    return user_factory("alice@example.com")


@pytest.fixture
def charlie(user_factory):
    return user_factory("charlie@example.com")


@pytest.fixture
def workspace(workspace_factory, alice):
    return workspace_factory("Acme", owner=alice)


@pytest.fixture
def client_for(client):
    """A test client logged in as the given user."""

    def login(user):
        client.force_login(user)
        return client

    return login


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2's deliberate slowness is a cost per user created, not something the tests measure.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def review_factory(db, workspace_factory):
    """A pull request with its space and an open round; returns the round."""
    from reviews.services.rounds import round_start
    from reviews.services.spaces import pull_request_upsert, space_get_or_create
    from workspaces.models import Repository

    def make(workspace=None, *, tier: str = "thorough", head_sha: str = "b" * 40):
        workspace = workspace or workspace_factory()
        repo, _ = Repository.objects.get_or_create(
            workspace=workspace, kind="github", full_name=f"acme/repo{workspace.pk}"
        )
        pr = pull_request_upsert(
            repository=repo, number=7, base_ref="main", head_ref="feature", head_sha=head_sha
        )
        space = space_get_or_create(pull_request=pr)
        return round_start(space=space, head_sha=head_sha, tier=tier)

    return make


@pytest.fixture
def stream_factory(db):
    from reviews.models import ReviewerStream

    def make(review_round, name: str, agent: str | None = None, dimension: str = ""):
        return ReviewerStream.objects.create(
            round=review_round, name=name, agent=agent or name, dimension=dimension or name
        )

    return make


def node_payload(**overrides):
    """A valid add_review_node payload; override any field."""
    payload = {
        "reasoning": "The query is built with string formatting from request data.",
        "type": "bug",
        "priority": "P1",
        "triage": {"category": "security", "severity": "high", "effort": "small"},
        "anchor": {"path": "app/views.py", "start_line": 10, "end_line": 12},
        "confidence": 0.8,
        "title": "SQL built from user input",
        "body": "Use parameters instead of formatting.",
    }
    payload.update(overrides)
    return payload


def use_fake_github(settings, fake_github) -> None:
    """Quorum talks to the fake GitHub with an installation token of the App `quorum[bot]`."""
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN, settings.GITHUB_APP_ID = (
        fake_github.base_url,
        "ghs_app",
        "",
    )
    fake_github.add_token("ghs_app", login="quorum[bot]")
