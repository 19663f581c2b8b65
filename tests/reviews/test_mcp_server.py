"""The MCP server driven by the SDK's own client, over stdio (`manage.py mcp` as a subprocess)
and streamable HTTP (the ASGI app under daphne), against the test database, a real Celery
worker and the fake model server: an agent requests a review of the sample repository, waits
with progress, reads the verdict and findings, adds one; a second agent confirms it; the
guardrails hold (no self-confirmation, no publish without a person, roles capped, tenants
apart, revoked tokens refused)."""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from django.conf import settings as django_settings
from django.db import connection
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from guardrails.models import ApprovalRequest, AuditEvent
from reviews.models import ReviewNode, ReviewRound
from tests.fakes.model_server import good_findings
from tests.fixtures import node_payload
from tests.reviews import pipeline_scenarios as scenario
from workspaces.services import api_token_create, api_token_revoke

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _stdio_env(secret: str, queue: str, tmp_path, fake_model) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": django_settings.REDIS_URL,
        "SECRET_KEY": django_settings.SECRET_KEY,
        "QUORUM_API_TOKEN": secret,
        "QUORUM_CELERY_QUEUE": queue,
        "QUORUM_WORKTREE_ROOT": str(tmp_path / "worktrees"),
        "QUORUM_LOCAL_REPO_ROOTS": str(tmp_path),
        **scenario.model_env(fake_model),
    }


@asynccontextmanager
async def stdio_session(slug: str, env: dict[str, str]):
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--workspace", slug],
        env=env,
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def structured(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


def error_text(result) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def tokens(shop, member_factory, workspace):
    _, _, _, alice = shop
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    viewer = member_factory(workspace, "viewer", "vera@example.com")
    return {
        "claude": api_token_create(user=alice, name="laptop", agent_name="claude-code")[1],
        "codex": api_token_create(user=bob, name="ci", agent_name="codex")[1],
        "viewer": api_token_create(user=viewer, name="read")[1],
        "alice": api_token_create(user=alice, name="me")[1],
    }


def test_an_agent_reviews_over_stdio_and_a_second_agent_confirms(
    shop, tokens, workspace, queue, worker_factory, fake_model, tmp_path
):
    repo, base, head, alice = shop
    worker_factory()
    scenario.install(fake_model)
    env = _stdio_env(tokens["claude"], queue, tmp_path, fake_model)
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done, total, message):
        progress.append((done, message))

    async def agent_one():
        async with stdio_session(workspace.slug, env) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            assert {
                "request_review",
                "wait_for_review",
                "get_review",
                "list_review_nodes",
                "add_review_node",
                "confirm_review_node",
                "resolve_review_node",
                "dismiss_review_node",
                "publish_review_to_github",
            } <= names
            started = structured(
                await session.call_tool(
                    "request_review",
                    {
                        "repository": repo.local_path,
                        "base": base,
                        "head": head,
                        "tier": "light",
                        "original_request": scenario.ORIGINAL_REQUEST,
                        "wait": True,
                    },
                    read_timeout_seconds=240,
                    progress_callback=on_progress,
                )
            )
            review, space = started["review"], started["space"]
            nodes = structured(
                await session.call_tool("list_review_nodes", {"space": space, "priority": "P0"})
            )["result"]
            malformed = await session.call_tool(
                "add_review_node", {"space": space, "finding": {"title": "no reasoning"}}
            )
            added = structured(
                await session.call_tool(
                    "add_review_node",
                    {
                        "space": space,
                        "finding": node_payload(
                            title="Search results are not paginated",
                            anchor={"path": "shop/search.py", "start_line": 10, "end_line": 12},
                        ),
                    },
                )
            )
            own = await session.call_tool(
                "confirm_review_node", {"space": space, "node": added["id"]}
            )
            publish = await session.call_tool("publish_review_to_github", {"space": space})
            return review, nodes, malformed, added, own, publish

    review, nodes, malformed, added, own, publish = anyio.run(agent_one)

    # The verdict the agent reads is the review's: the sample's SQL injection blocks it, and
    # the fix list carries its fix prompt.
    assert review["state"] == "finished"
    assert review["verdict"]["level"] == "block"
    assert any("search.py" in item for item in review["fix_list"])
    assert review["next_step"].startswith("Fix the findings")
    assert any(n["where"].startswith("shop/search.py") for n in nodes)
    # Progress named the stages as the round went through them.
    assert len(progress) >= 3
    assert any("reviewers" in (m or "") for _, m in progress)

    # The pipeline's own validation, every reason at once; nothing recorded. A finding with
    # neither form's fields is read in the flat form reviewers are shown (both are accepted).
    assert "severity: required field is missing" in error_text(malformed)
    assert "body: required field is missing" in error_text(malformed)
    assert "finding_refused" in error_text(malformed)
    assert not ReviewNode.objects.filter(title="no reasoning").exists()
    assert "cannot confirm" in error_text(own)
    node = ReviewNode.objects.get(pk=added["id"])
    assert node.stream.name == "agent claude-code"
    assert node.stream.kind == "external"

    # A local repository has no pull request on GitHub: the refusal says what to do instead.
    assert "publish_refused" in error_text(publish)
    assert not ApprovalRequest.objects.exists()

    # A second agent (another person's) confirms: the finding is consensus-ready.
    async def agent_two():
        env2 = _stdio_env(tokens["codex"], queue, tmp_path, fake_model)
        async with stdio_session(workspace.slug, env2) as session:
            return structured(
                await session.call_tool(
                    "confirm_review_node", {"space": review["space"], "node": added["id"]}
                )
            )

    assert anyio.run(agent_two)["status"] == "consensus_ready"
    labels = set(AuditEvent.objects.values_list("actor_label", flat=True))
    assert "agent claude-code for alice@example.com" in labels
    assert "agent codex for bob@example.com" in labels
    added_event = AuditEvent.objects.get(action="node.added")
    assert added_event.actor_label == "agent claude-code for alice@example.com"


def test_stdio_refuses_a_revoked_token_and_roles_hold(
    shop, tokens, workspace, workspace_factory, queue, fake_model, tmp_path, review_factory
):
    _, _, _, alice = shop
    env = _stdio_env(tokens["viewer"], queue, tmp_path, fake_model)
    space = review_factory(workspace=workspace).space
    other_space = review_factory().space

    async def as_viewer():
        async with stdio_session(workspace.slug, env) as session:
            read = await session.call_tool("get_review", {"space": space.pk})
            add = await session.call_tool(
                "add_review_node", {"space": space.pk, "finding": node_payload()}
            )
            publish = await session.call_tool("publish_review_to_github", {"space": space.pk})
            elsewhere = await session.call_tool("get_review", {"space": other_space.pk})
            return read, add, publish, elsewhere

    read, add, publish, elsewhere = anyio.run(as_viewer)
    assert not read.is_error
    assert "forbidden" in error_text(add)
    assert "forbidden" in error_text(publish)
    assert "not_found" in error_text(elsewhere)

    # A revoked token: the server does not start, and a running one refuses the next call.
    claude = tokens["claude"]
    env = _stdio_env(claude, queue, tmp_path, fake_model)
    token = alice.api_tokens.get(agent_name="claude-code")

    async def revoked_mid_session():
        async with stdio_session(workspace.slug, env) as session:
            first = await session.call_tool("get_review", {"space": space.pk})
            await anyio.to_thread.run_sync(lambda: api_token_revoke(token=token, actor=alice))
            second = await session.call_tool("get_review", {"space": space.pk})
            return first, second

    first, second = anyio.run(revoked_mid_session)
    assert not first.is_error
    assert "unauthenticated" in error_text(second)


def test_http_transport_authenticates_every_request(
    shop, tokens, workspace, asgi_server, review_factory, workspace_factory
):
    space = review_factory(workspace=workspace).space
    url = f"{asgi_server}/mcp/{workspace.slug}/"

    anonymous = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert anonymous.status_code == 401
    assert "Bearer" in anonymous.headers["www-authenticate"]

    async def as_agent(secret: str):
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            review = await session.call_tool("get_review", {"space": space.pk})
            add = await session.call_tool(
                "add_review_node", {"space": space.pk, "finding": {"reasoning": "x"}}
            )
            resource = await session.read_resource(f"quorum://reviews/{space.pk}/rounds/1/json")
            return tools, review, add, resource

    tools, review, add, resource = anyio.run(as_agent, tokens["claude"])
    assert "request_review" in tools
    assert structured(review)["space"] == space.pk
    assert "finding_refused" in error_text(add) or "round_not_finished" in error_text(add)
    assert json.loads(resource.contents[0].text)["schema"] == "quorum.review/v1"

    # A revoked token is refused at the door, before any session.
    from workspaces.models import ApiToken

    api_token_revoke(token=ApiToken.objects.get(agent_name="claude-code"), actor=None)
    refused = httpx2.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": f"Bearer {tokens['claude']}"},
    )
    assert refused.status_code == 401

    # A workspace the token's person is not a member of does not exist for them.
    other = workspace_factory()
    denied = httpx2.post(
        f"{asgi_server}/mcp/{other.slug}/",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": f"Bearer {tokens['alice']}"},
    )
    assert denied.status_code == 404


def test_an_agent_waits_for_a_person_even_where_people_publish_at_once(
    publishable, fake_github, workspace
):
    """With the workspace letting people publish without approval, an agent's request still
    waits: guardrails never take an agent's word as a person's."""
    from guardrails.models import ActionPolicy
    from reviews.services.publishing import publish_request
    from workspaces.services import api_token_authenticate

    space, _, bob, _ = publishable
    ActionPolicy.objects.create(workspace=workspace, action_class="prPublish", policy="allow")
    _, secret = api_token_create(user=bob, name="bot", agent_name="review-bot")
    agent = api_token_authenticate(secret)
    result = publish_request(space=space, selection="all_open", approve_on_ship=False, actor=agent)
    # No approver is online to take it, so it is refused rather than posted (a person's
    # request would have been posted at once).
    assert result.outcome == "refused", result
    assert "approver" in result.reason
    assert fake_github.reviews("acme", "app", 5) == []
    person = publish_request(space=space, selection="all_open", approve_on_ship=False, actor=bob)
    assert person.outcome == "allowed"


FIXED_SEARCH = (
    "        return conn.execute(\n"
    '            "SELECT id, name FROM products WHERE name LIKE ?", (f"%{term}%",)\n'
    "        ).fetchall()\n"
)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_fix_loop_two_rounds_then_a_person(
    transport, request, shop, tokens, workspace, queue, worker_factory, fake_model, tmp_path
):
    """Round 1 blocks on the SQL injection; the agent applies the fix, pushes and asks again:
    round 2 reports it fixed. Still not approved after two rounds, the review is flagged for a
    person: next_step says not to try a third time, and a third request on the same head is
    refused with the reason. The original request given in round 1 carries into round 2."""
    repo, base, head, _ = shop
    worker_factory()
    scenario.install(fake_model)
    env = _stdio_env(tokens["claude"], queue, tmp_path, fake_model)
    url = (
        f"{request.getfixturevalue('asgi_server')}/mcp/{workspace.slug}/"
        if transport == "http"
        else ""
    )
    first_request = {
        "repository": repo.local_path,
        "base": base,
        "head": head,
        "tier": "light",
        "original_request": scenario.ORIGINAL_REQUEST,
        "wait": True,
    }
    # Later rounds do not repeat the request: the review keeps it.
    again = {k: v for k, v in first_request.items() if k != "original_request"}

    def session():
        if transport == "http":
            return http_session(url, tokens["claude"])
        return stdio_session(workspace.slug, env)

    async def ask(session, arguments):
        return structured(
            await session.call_tool("request_review", arguments, read_timeout_seconds=240)
        )["review"]

    async def loop():
        async with session() as s:
            first = await ask(s, first_request)
            await anyio.to_thread.run_sync(apply_fix)
            second = await ask(s, again)
            third = await s.call_tool("request_review", {**again, "wait": False})
            latest = structured(await s.call_tool("get_review", {"space": second["space"]}))
            return first, second, third, latest

    def apply_fix():
        # The agent applies the fix prompt (a scripted patch) and pushes to the head branch;
        # the model no longer reports what is fixed.
        path = Path(repo.local_path)
        git = ["git", "-C", str(path)]
        import subprocess

        subprocess.run([*git, "checkout", "-q", head], check=True)
        source = (path / "shop/search.py").read_text()
        lines = source.splitlines(keepends=True)
        start = next(i for i, line in enumerate(lines) if "query = " in line)
        lines[start : start + 2] = [FIXED_SEARCH]
        (path / "shop/search.py").write_text("".join(lines))
        subprocess.run([*git, "commit", "-qam", "Use a query parameter"], check=True)
        scenario.install(
            fake_model,
            overrides={
                "implementation": good_findings([], path="shop/search.py", name="impl2"),
                "security": good_findings(
                    [scenario.permission_finding()], path="shop/views.py", name="sec2"
                ),
            },
        )

    first, second, third, latest = anyio.run(loop)
    assert first["verdict"]["level"] == "block"
    assert any("SQL" in item for item in first["fix_list"])
    assert second["round"] == 2
    assert any("SQL" in fixed for fixed in second["fixed"]), second
    assert not any("SQL" in item for item in second["fix_list"])
    assert second["verdict"]["level"] in ("block", "hold")
    carried = ReviewRound.objects.get(space_id=second["space"], number=2).original_request
    assert carried == scenario.ORIGINAL_REQUEST, "the request carried into round 2"
    assert second["flagged_for_person"] is True
    assert "Do not request another round" in second["next_step"]
    assert "request_review" not in second["next_step"]
    assert "flagged for a person" in error_text(third) and "round_refused" in error_text(third)
    assert latest["round"] == 2, "no third round was started"
    assert "request_review" not in latest["next_step"]


def test_cancelling_a_waiting_request_cancels_its_round(
    shop, tokens, workspace, queue, fake_model, tmp_path
):
    """No worker takes the round, so it waits in the queue; the agent gives up on its call
    (the SDK sends notifications/cancelled) and the round it started is cancelled, by it."""
    from reviews.models import ReviewRound

    repo, base, head, _ = shop
    env = _stdio_env(tokens["claude"], queue, tmp_path, fake_model)
    progress: list[str] = []

    async def on_progress(done, total, message):
        progress.append(message or "")

    async def give_up():
        async with stdio_session(workspace.slug, env) as session:
            with anyio.move_on_after(4):
                await session.call_tool(
                    "request_review",
                    {"repository": repo.local_path, "base": base, "head": head, "wait": True},
                    progress_callback=on_progress,
                )
                raise AssertionError("the round cannot finish without a worker")
            await anyio.sleep(1)  # the server hears the cancellation before the session ends

    anyio.run(give_up)
    assert progress and progress[0].startswith("pending")
    review_round = ReviewRound.objects.get()
    deadline = time.monotonic() + 15
    while review_round.state != "cancelled" and time.monotonic() < deadline:
        time.sleep(0.2)
        review_round.refresh_from_db()
    assert review_round.state == "cancelled"
    assert "agent claude-code for alice@example.com" in review_round.error


@asynccontextmanager
async def http_session(url: str, secret: str):
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def test_an_agent_reviews_over_http_with_progress(
    shop, tokens, workspace, queue, worker_factory, fake_model, asgi_server
):
    """The same review over streamable HTTP: progress arrives on the call's stream, a second
    agent confirms, a viewer's token may read but not confirm."""
    repo, base, head, _ = shop
    worker_factory()
    scenario.install(fake_model)
    url = f"{asgi_server}/mcp/{workspace.slug}/"
    progress: list[str] = []

    async def on_progress(done, total, message):
        progress.append(message or "")

    async def run():
        async with http_session(url, tokens["claude"]) as session:
            started = structured(
                await session.call_tool(
                    "request_review",
                    {"repository": repo.local_path, "base": base, "head": head, "wait": True},
                    read_timeout_seconds=240,
                    progress_callback=on_progress,
                )
            )
            space = started["space"]
            node = structured(
                await session.call_tool(
                    "add_review_node",
                    {"space": space, "finding": node_payload(title="Export has no size limit")},
                )
            )
        async with http_session(url, tokens["viewer"]) as session:
            refused = await session.call_tool(
                "confirm_review_node", {"space": space, "node": node["id"]}
            )
            nodes = structured(await session.call_tool("list_review_nodes", {"space": space}))
        async with http_session(url, tokens["codex"]) as session:
            confirmed = structured(
                await session.call_tool("confirm_review_node", {"space": space, "node": node["id"]})
            )
        return started, refused, nodes, confirmed

    started, refused, nodes, confirmed = anyio.run(run)
    assert started["review"]["verdict"]["level"] == "block"
    assert any(m.startswith("running") for m in progress), progress
    assert "forbidden" in error_text(refused)
    assert any(n["author"] == "agent claude-code" for n in nodes["result"])
    assert confirmed["status"] == "consensus_ready"
    event = AuditEvent.objects.filter(action="node.confirmed").latest("id")
    assert event.actor_label == "agent codex for bob@example.com"


def test_an_agent_lists_a_thread_and_replies_as_itself(
    tokens, workspace, asgi_server, review_factory, stream_factory
):
    """Over HTTP: an agent reads a finding's thread and answers in it; its message is the
    agent's, for its person. A viewer's token may read the thread, not post (refused,
    audited)."""
    from django.contrib.auth import get_user_model

    from reviews.models import ThreadMessage
    from reviews.services import threads
    from reviews.services.node_recording import node_record

    stream = stream_factory(review_factory(workspace=workspace), "security")
    node = node_record(stream=stream, payload=node_payload(), file_lines={"app/views.py": 40}).node
    bob = get_user_model().objects.get(email="bob@example.com")
    thread = threads.thread_get(space=node.space, key=f"node:{node.pk}")
    question = threads.message_post(thread=thread, user=bob, body="Is this reachable?")
    subject = {"space": node.space_id, "subject": f"node:{node.pk}"}
    url = f"{asgi_server}/mcp/{workspace.slug}/"

    async def run():
        async with http_session(url, tokens["claude"]) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            before = structured(await session.call_tool("list_thread", subject))["result"]
            posted = structured(
                await session.call_tool(
                    "reply",
                    {
                        **subject,
                        "body": "Yes: `/search` passes `q` in.",
                        "in_reply_to": before[0]["id"],
                    },
                )
            )
            unknown = await session.call_tool("list_thread", {**subject, "subject": "node:0"})
        async with http_session(url, tokens["viewer"]) as session:
            after = structured(await session.call_tool("list_thread", subject))["result"]
            refused = await session.call_tool("reply", {**subject, "body": "Me too."})
            nodes = structured(
                await session.call_tool("list_review_nodes", {"space": node.space_id})
            )["result"]
        return tools, before, posted, unknown, after, refused, nodes

    tools, before, posted, unknown, after, refused, nodes = anyio.run(run)
    assert {"list_thread", "reply"} <= tools
    assert [(m["author"], m["body"]) for m in before] == [("bob@example.com", "Is this reachable?")]
    assert posted["author"] == "agent claude-code for alice@example.com"
    assert posted["source"] == "agent" and posted["in_reply_to"] == question.pk
    assert "not_found" in error_text(unknown) or "thread_refused" in error_text(unknown)
    assert [m["id"] for m in after] == [question.pk, posted["id"]]
    assert [(n["id"], n["messages"]) for n in nodes] == [(node.pk, 2)]
    assert "forbidden" in error_text(refused)
    stored = ThreadMessage.objects.get(pk=posted["id"])
    assert (stored.source, stored.author.email) == ("agent", "alice@example.com")
    denied = AuditEvent.objects.get(action="permission.denied")
    assert denied.actor_label == "vera@example.com"
    assert denied.payload["attempted"] == "post in review threads"
