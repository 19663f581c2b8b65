"""A credential committed in a pull request never leaves through what Quorum stores or shows.

The sample shop (reviews/sources/sample_repo.py) with its committed API key, plus a settings module
that plants a GitHub token where bandit quotes it in its messages (B105, B106, B107), reviewed
offline on the faithful fake GitHub, a finding dismissed, the review published. Then neither
secret is in any text column of the database, the review page, the markdown report, the JSON
export, the audit export or anything GitHub received.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from reviews.models import ReviewNode, ReviewRound
from reviews.pipeline.runner import run_inline
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_dismiss
from reviews.services.publishing import publish_review
from reviews.services.requests import review_request
from reviews.sources.sample_repo import BASE_FILES, FEATURE_FILES
from tests.fixtures import node_payload, use_fake_github
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLE_TOKEN = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"  # the sample shop's committed key
PLANTED = "ghp_Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b"
SETTINGS = f'''"""Deployment settings."""

password = "{PLANTED}"


def login(client, user, password="{PLANTED}"):
    return client.auth(user, password=password)


def connect(client):
    return client.open(user="shop", password="{PLANTED}")
'''
SECRETS = (SAMPLE_TOKEN, PLANTED)


TEXT_TYPES = {"text", "character varying", "varchar", "json", "jsonb"}


def _every_text_column() -> list[tuple[str, str]]:
    """Every column of every table that can hold text, read from the database itself (not the
    models, so a table no model describes is searched too)."""
    introspection = connection.introspection
    columns = []
    with connection.cursor() as cursor:
        for table in introspection.table_names(cursor):
            for column in introspection.get_table_description(cursor, table):
                kind = introspection.get_field_type(column.type_code, column)
                if (
                    kind in ("TextField", "CharField", "JSONField")
                    or str(column.type_code).lower().split("(")[0] in TEXT_TYPES
                ):
                    columns.append((table, column.name))
    return columns


def _rows_containing(secret: str) -> list[str]:
    found = []
    with connection.cursor() as cursor:
        for table, column in _every_text_column():
            cursor.execute(
                f'SELECT count(*) FROM "{table}" WHERE CAST("{column}" AS TEXT) LIKE %s',  # noqa: S608
                [f"%{secret}%"],
            )
            if cursor.fetchone()[0]:
                found.append(f"{table}.{column}")
    return found


@pytest.fixture
def published(fake_github, git_repo_factory, settings, workspace, alice, tmp_path):
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    use_fake_github(settings, fake_github)
    repo = git_repo_factory("shop")
    repo.commit("base", BASE_FILES, branch="main")
    repo.commit("feature", {**FEATURE_FILES, "shop/settings.py": SETTINGS}, branch="feature")
    fake_github.add_repo("acme", "shop", repo.path)
    fake_github.add_pull("acme", "shop", 7, base="main", head="feature", author="dev")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/shop"
    )
    review_round = run_inline(
        review_request(repository=repository, actor=alice, number=7, queue=False).pk
    )
    assert review_round.state == ReviewRound.State.FINISHED, review_round.error
    # A finding submitted by another tool (CI) quoting the token in every text it has: the
    # recording boundary every stream goes through redacts it.
    ci = review_round.streams.create(name="ci-scan", agent="ci-scan", kind="analyzer")
    quoting = f"hardcoded password: '{PLANTED}'"
    recorded = node_record(
        stream=ci,
        payload=node_payload(
            reasoning=f"Found {quoting} on line 3.",
            title=f"CI-1: {quoting}",
            body=f"The value {PLANTED} is a live token.",
            anchor={"path": "shop/settings.py", "start_line": 3, "end_line": 3},
            fix={
                "replacement_lines": [f'password = "{PLANTED}"'],
                "fix_prompt": f"Replace {PLANTED} with an environment variable.",
            },
            cross_notes=[{"dimension": "quality", "note": f"token {PLANTED} also in docs"}],
        ),
        file_lines={"shop/settings.py": len(SETTINGS.splitlines())},
    )
    assert recorded.node is not None and recorded.node.replacement_lines is None
    quoted = ReviewNode.objects.filter(round=review_round, title__startswith="B105").get()
    node_dismiss(node=quoted, user=alice, reason="rotated already")
    record = publish_review(
        space=review_round.space, selection="all_open", approve_on_ship=False, actor=alice
    )
    assert record.state == "posted", record.error
    return review_round, fake_github


def test_bandit_quoted_the_planted_token_and_the_finding_still_says_what_it_is(published):
    review_round, _ = published
    nodes = ReviewNode.objects.filter(round=review_round, path="shop/settings.py")
    titles = {n.title for n in nodes}
    # Bandit's three credential rules fired on the planted lines, each at P1 or above.
    assert {t.split(":")[0] for t in titles} >= {"B105", "B106", "B107"}
    assert all(n.priority in ("P0", "P1") for n in nodes if n.title[:4] in ("B105", "B106"))
    assert any("[REDACTED:" in t for t in titles)


def test_the_secrets_appear_nowhere(published, workspace, alice, client_for):
    review_round, fake_github = published
    space = review_round.space
    client = client_for(alice)
    shown = {
        "page": client.get(f"/w/{workspace.slug}/reviews/{space.pk}/"),
        "report": client.get(f"/w/{workspace.slug}/reviews/{space.pk}/report.md"),
        "json": client.get(f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}"),
        "audit.jsonl": client.get(f"/w/{workspace.slug}/audit/export.jsonl"),
        "audit.csv": client.get(f"/w/{workspace.slug}/audit/export.csv"),
    }
    texts = {}
    for name, response in shown.items():
        assert response.status_code == 200, name
        body = (
            b"".join(response.streaming_content) if response.streaming else response.content
        ).decode()
        texts[name] = body
    assert "B105" in texts["page"] and "B105" in texts["report"]
    assert "node.dismissed" in texts["audit.jsonl"]
    received = [json.dumps(r.json) for r in fake_github.requests_to("POST", r".*")]
    assert received and any("B106" in body for body in received)
    assert any("CI-1: hardcoded password" in body for body in received)
    # The database search can find things: what the findings say is stored, and found.
    assert ("reviews_reviewnode", "body") in _every_text_column()
    assert any(where.startswith("reviews_reviewnode.") for where in _rows_containing("B105"))
    leaks = []
    for secret in SECRETS:
        leaks += [name for name, text in texts.items() if secret in text]
        leaks += ["GitHub"] if any(secret in body for body in received) else []
        leaks += _rows_containing(secret)
    assert leaks == [], leaks
