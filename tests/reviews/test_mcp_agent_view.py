"""MCP as agents use it: one view of the findings, bounded input, agents named as agents, and a
server process that stops when told to.

Findings come from a real round (the sample repository on the fake model, run inline); the
tools are called as the MCP server calls them, with a caller loaded from a real token. The
transport checks run against daphne with the project's ASGI application.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from django.core.management import call_command
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from config.application_errors import ApplicationError
from guardrails.models import ApprovalRequest
from reviews.domain import consensus
from reviews.mcp import tools
from reviews.models import ReviewNode
from tests.fixtures import node_payload
from tests.reviews import pipeline_scenarios as scenario
from tests.reviews.test_mcp_server import http_session
from workspaces.models import ApiToken
from workspaces.services import api_token_authenticate, api_token_create

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def reviewed(settings, tmp_path, workspace, fake_model, alice):
    """A finished thorough round of the sample change, whose reviewers overlap."""
    scenario.install(fake_model)
    review = scenario.sample_reviews(
        settings, tmp_path, workspace, fake_model, alice, tier="thorough"
    )
    return review()


@pytest.fixture
def agent(alice, workspace):
    return tools.caller_for(
        api_token_create(user=alice, name="laptop", agent_name="claude-code")[1], workspace.slug
    )


def test_list_review_nodes_and_get_review_count_the_same_findings(reviewed, agent):
    space = reviewed.space_id
    review = tools.get_review(agent, space)
    listed = tools.list_review_nodes(agent, space)
    everything = tools.list_review_nodes(agent, space, include_duplicates=True)

    assert len(listed) == review.findings
    assert {f.id for f in listed} == set(
        ReviewNode.objects.filter(round=reviewed, duplicate_of__isnull=True).values_list(
            "pk", flat=True
        )
    )
    merged = [f for f in everything if f.duplicate_of is not None]
    assert merged, "the sample's reviewers report some defects twice"
    canonical = {f.id: f for f in listed}
    for row in merged:
        assert row.id in canonical[row.duplicate_of].duplicates
    assert sum(len(f.found_by) > 1 for f in listed) >= 1


def test_a_merged_rows_confirmation_goes_to_its_canonical_and_says_so(reviewed, agent):
    row = ReviewNode.objects.filter(round=reviewed, duplicate_of__isnull=False).first()
    # Its canonical as the reviewers left it, before the lenses confirmed it.
    row.duplicate_of.confirmations.all().delete()
    ReviewNode.objects.filter(pk=row.duplicate_of_id).update(status="open")
    result = tools.act_on_node(
        agent, reviewed.space_id, row.pk, consensus.Action.CONFIRM, "checked it"
    )
    assert result.id == row.duplicate_of_id
    assert f"Finding {row.pk} repeats finding {row.duplicate_of_id}" in result.note
    assert row.duplicate_of.confirmations.filter(agent__endswith=":claude-code").exists()
    assert not row.confirmations.exists()


def test_get_review_node_gives_one_finding_in_full(reviewed, agent):
    node = ReviewNode.objects.filter(round=reviewed, duplicate_of__isnull=True).first()
    detail = tools.get_review_node(agent, reviewed.space_id, node.pk)
    assert (detail.body, detail.reasoning, detail.confidence) == (
        node.body,
        node.reasoning,
        node.confidence,
    )
    assert detail.type == node.type and detail.round == reviewed.number
    with pytest.raises(tools.NotFound):
        tools.get_review_node(agent, reviewed.space_id, 10**9)


def test_list_reviews_finds_the_review_of_a_pull_request(reviewed, agent, workspace_factory):
    found = tools.list_reviews(agent, repository="")
    assert [r.space for r in found] == [reviewed.space_id]
    assert found[0].round == reviewed.number and found[0].verdict in ("ship", "hold", "block")
    assert tools.list_reviews(agent, flagged=True) == []
    # Another workspace's reviews are not listed.
    assert all(r.space == reviewed.space_id for r in tools.list_reviews(agent, limit=200))


def test_an_over_long_field_is_refused_naming_the_field_and_its_limit(reviewed, agent):
    finding = {
        "reasoning": "r" * 30_000,
        "type": "bug",
        "severity": "high",
        "category": "correctness",
        "effort": "small",
        "confidence": 0.8,
        "title": "Too much text",
        "body": "b" * 900_000,
    }
    with pytest.raises(ApplicationError) as refused:
        tools.add_review_node(agent, reviewed.space_id, finding)
    message = refused.value.message
    assert "body: must be at most 20,000 characters (got 900,000)" in message
    assert "reasoning: must be at most 20,000 characters" in message
    assert ReviewNode.objects.filter(title="Too much text").count() == 0


def test_the_inbox_names_the_agent_that_asked(publishable, fake_github, workspace, client_for):
    from django.utils import timezone

    from guardrails.models import ApproverPresence

    space, _, bob, vera = publishable
    ApproverPresence.objects.create(
        channel_name="inbox-vera", workspace=workspace, user=vera, last_seen=timezone.now()
    )
    caller = tools.caller_for(
        api_token_create(user=bob, name="laptop", agent_name="claude-code")[1], workspace.slug
    )
    result = tools.publish_review_to_github(caller, space.pk)
    assert result.outcome == "pending approval by a person", result
    request = ApprovalRequest.objects.get(pk=result.approval_request)
    assert request.requester_label == "agent claude-code for bob@example.com"
    inbox = client_for(vera).get(f"/w/{workspace.slug}/approvals/").content.decode()
    assert "agent claude-code for bob@example.com" in inbox
    assert "agent:" not in inbox


def test_a_token_for_an_agent_is_made_from_the_command_line(alice, capsys):
    call_command("token", "create", "--user", alice.email, "--name", "ci", "--agent", "codex")
    secret = capsys.readouterr().out.strip()
    token = ApiToken.objects.get(name="ci")
    assert token.agent_name == "codex" and secret.startswith(token.prefix)
    assert getattr(api_token_authenticate(secret), "quorum_agent", "") == "codex"


# -- the HTTP transport --------------------------------------------------------------------------


def test_a_2_mib_request_is_a_json_rpc_error_naming_the_limit(asgi_server, workspace, alice):
    secret = api_token_create(user=alice, name="big", agent_name="claude-code")[1]
    url = f"{asgi_server}/mcp/{workspace.slug}/"
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "reply", "arguments": {"body": "x" * (2 * 1024 * 1024)}},
        }
    )
    answer = httpx2.post(
        url,
        content=body,
        headers={
            "Authorization": f"Bearer {secret}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        timeout=30,
    )
    assert answer.status_code == 413
    error = answer.json()["error"]
    assert error["code"] == -32600
    assert "at most 1048576 bytes" in error["message"]

    async def through_the_sdk():
        async with http_session(url, secret) as session:
            try:
                await session.call_tool(
                    "reply", {"space": 1, "subject": "node:1", "body": "y" * (2 * 1024 * 1024)}
                )
            except Exception as exc:  # the SDK raises the JSON-RPC error as McpError
                return str(exc)
            return "no error"

    assert "at most 1048576 bytes" in anyio.run(through_the_sdk)


@pytest.mark.postgres
def test_daphne_exits_on_sigterm_with_an_mcp_call_in_flight(
    review_factory, workspace, alice, tmp_path, settings
):
    """An agent waits on a round nobody runs; SIGTERM still stops the server within 5 s."""
    from django.db import connection

    review_round = review_factory(workspace=workspace)
    secret = api_token_create(user=alice, name="wait", agent_name="claude-code")[1]
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "SECRET_KEY": settings.SECRET_KEY,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DEBUG": "true",
    }
    env.pop("REDIS_URL", None)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "config.asgi:application",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "daphne.log", "w"),  # noqa: SIM115
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "daphne.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "daphne did not answer within 60 s"
            try:
                httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx2.TransportError:
                time.sleep(0.1)
        stopped_after: list[float] = []
        initialised = anyio.Event()

        async def agent_waits():
            headers = {"Authorization": f"Bearer {secret}"}
            url = f"http://127.0.0.1:{port}/mcp/{workspace.slug}/"
            async with anyio.create_task_group() as group:

                async def waiting():
                    # The server going away ends the call with an error: that is expected, and
                    # must not cancel the timing of the exit below.
                    with contextlib.suppress(Exception):
                        async with (
                            httpx2.AsyncClient(headers=headers, timeout=30) as http,
                            streamable_http_client(url, http_client=http) as (read, write),
                            ClientSession(read, write) as session,
                        ):
                            await session.initialize()
                            initialised.set()
                            await session.call_tool(
                                "wait_for_review",
                                {"space": review_round.space_id, "round": review_round.number},
                            )

                async def terminate():
                    with anyio.fail_after(30):
                        await initialised.wait()
                    await anyio.sleep(1.5)  # the call is in flight by now
                    server.send_signal(signal.SIGTERM)
                    began = time.monotonic()
                    # What would fail is a server that waits on the call for ever; how fast
                    # it exits depends on the machine's load, so the window is generous.
                    while server.poll() is None and time.monotonic() - began < 20:
                        await anyio.sleep(0.05)
                    stopped_after.append(time.monotonic() - began)
                    group.cancel_scope.cancel()

                group.start_soon(waiting)
                group.start_soon(terminate)

        anyio.run(agent_waits)
        assert server.poll() is not None, (tmp_path / "daphne.log").read_text()[-2000:]
        assert stopped_after and stopped_after[0] < 20
    finally:
        if server.poll() is None:
            server.kill()


def test_the_report_names_an_agents_finding_by_agent_and_person(reviewed, agent):
    added = tools.add_review_node(
        agent, reviewed.space_id, node_payload(title="Export has no size limit")
    )
    report = tools.report(agent, reviewed.space_id, reviewed.number)
    line = next(line for line in report.splitlines() if "Export has no size limit" in line)
    assert "agent claude-code for alice@example.com" in line, line
    assert "agent:" not in report
    assert added.status == "open"
