"""The audit trail's filters mean the same on the page, its exports and the API: one selector
(guardrails.selectors.audit_events)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from guardrails.audit import SYSTEM, Actor, Target, audit_record


@pytest.fixture
def trail(workspace, alice):
    # One event from two days ago, for the day bounds; the rest now.
    with time_machine.travel(timezone.now() - timedelta(days=2)):
        audit_record(
            action="approval.requested",
            actor=Actor.of(alice),
            workspace=workspace,
            target=Target("reviewspace", "7", "acme/app#5"),
        )
    for action, actor, target in (
        ("approval.approved", SYSTEM, Target("reviewspace", "7", "acme/app#5")),
        ("node.dismissed", Actor.of(alice), Target("reviewnode", "70", "P2 SQL built by hand")),
        ("repositories.connected", Actor.of(alice), Target("repository", "3", "acme/app")),
    ):
        audit_record(action=action, actor=actor, workspace=workspace, target=target)
    return workspace


def _page_seqs(client, slug: str, query: str) -> list[int]:
    # The page shows each event's number in its row's first cell, before its time.
    html = client.get(f"/w/{slug}/audit/?{query}").content.decode()
    return [int(s) for s in re.findall(r"<td>(\d+)</td><td><time", html)]


def _api_seqs(client, slug: str, query: str) -> list[int]:
    return [e["seq"] for e in client.get(f"/api/v1/workspaces/{slug}/audit?{query}").json()]


def _export_seqs(client, slug: str, query: str) -> list[int]:
    import json

    body = b"".join(client.get(f"/w/{slug}/audit/export.jsonl?{query}").streaming_content)
    return [json.loads(line)["seq"] for line in body.decode().splitlines() if line]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "action=approval.",
        "actor=ALICE",
        "target=7",  # the id, exactly
        "target=sql built",  # part of the label, any case
        "action=approval.&target=acme",
        f"since={(timezone.localdate() - timedelta(days=1)).isoformat()}",
        f"until={(timezone.localdate() - timedelta(days=1)).isoformat()}",
    ],
)
def test_the_page_its_export_and_the_api_return_the_same_events(trail, alice, client, query):
    client.force_login(alice)
    api = _api_seqs(client, trail.slug, query)
    assert api, query
    # The export walks the chain oldest first; the page and the API read newest first.
    assert _export_seqs(client, trail.slug, query) == sorted(api)
    page = _page_seqs(client, trail.slug, query)
    assert page == api, (query, page, api)


def test_the_filters_mean_what_the_selector_documents(trail):
    from guardrails.selectors import audit_events

    def actions(**filters):
        return [e.action for e in audit_events(workspace=trail, **filters)]

    assert actions(target="7") == ["approval.approved", "approval.requested"]
    assert actions(target="sql BUILT") == ["node.dismissed"]
    assert "workspace.created" in actions(action="workspace.")
    assert actions(since=timezone.localdate() - timedelta(days=1), action="approval.") == [
        "approval.approved"
    ]
    assert actions(until=timezone.localdate() - timedelta(days=1)) == ["approval.requested"]


@pytest.mark.parametrize("day", ["0", "20240101", "2024-1-1", "yesterday"])
def test_the_api_takes_days_only_as_written_in_its_schema(trail, alice, client, day):
    """`format: date` means YYYY-MM-DD; pydantic alone would read `until=0` as 1970-01-01."""
    client.force_login(alice)
    response = client.get(f"/api/v1/workspaces/{trail.slug}/audit?until={day}")
    assert response.status_code == 422, response.content


def test_who_published_what_lists_every_action_that_writes_to_github(workspace, alice, client):
    """Reviews, issues and replies posted through approval, and the check runs (or commit
    statuses) the app posts on each round's head: every action class that writes to GitHub
    (tests/guardrails/test_github_writers.py holds the registry to the code); nothing else."""
    from guardrails.audit import APP

    for action in (
        "prPublish.executed",
        "issueCreate.executed",
        "threadAnswer.executed",
        "checkRun.executed",
        "policyChange.executed",
        "approval.approved",
    ):
        audit_record(
            action=action, actor=APP, workspace=workspace, target=Target("reviewspace", "7", "x")
        )
    client.force_login(alice)
    page = client.get(f"/w/{workspace.slug}/audit/").content.decode()
    href = re.search(r'<a href="\?action=([^"]+)">Who published what</a>', page).group(1)
    listed = client.get(f"/w/{workspace.slug}/audit/?action={href}").content.decode()
    shown = set(re.findall(r"<code>(\w+\.\w+)</code>", listed))
    assert shown == {
        "prPublish.executed",
        "issueCreate.executed",
        "threadAnswer.executed",
        "checkRun.executed",
    }
    api = client.get(f"/api/v1/workspaces/{workspace.slug}/audit?action={href}").json()
    assert {e["action"] for e in api} == shown
