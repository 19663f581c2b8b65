"""An agent asks through MCP (streamable HTTP) for a review to be published: nothing reaches
GitHub until a person approves in the browser, then exactly one review does, and the trail
names the agent and its person."""

from __future__ import annotations

import threading
import time

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from guardrails.models import ApprovalRequest, AuditEvent
from tests.e2e.support import login
from tests.e2e.test_publish_browser import executor  # noqa: F401  (the executing worker)
from workspaces.services import api_token_create

# PostgreSQL: `manage.py mcp`, the forked live server and the test write one database at once,
# which a SQLite file does not support.
pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _publish_as_agent(url: str, secret: str, space: int) -> dict:
    async def run() -> dict:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("publish_review_to_github", {"space": space})
            assert not result.is_error, result.content
            return result.structured_content

    answer: dict = {}
    # Its own thread: the browser's event loop owns this one.
    thread = threading.Thread(target=lambda: answer.update(anyio.run(run)))
    thread.start()
    thread.join(60)
    return answer


def test_an_agents_publish_waits_for_a_person(
    publishable,
    executor,  # noqa: F811
    asgi_server,
    browser,
    fake_github,
    workspace,
):
    space, _, bob, _ = publishable
    _, secret = api_token_create(user=bob, name="bot", agent_name="review-bot")
    vera = login(browser, asgi_server, "vera@example.com")
    vera.goto(f"{asgi_server}/w/{workspace.slug}/approvals/")
    vera.wait_for_selector("#own-presence")

    answer = _publish_as_agent(f"{asgi_server}/mcp/{workspace.slug}/", secret, space.pk)
    assert answer["outcome"] == "pending approval by a person"
    assert fake_github.reviews("acme", "app", 5) == []
    request = ApprovalRequest.objects.get(pk=answer["approval_request"])
    assert request.requester == bob

    card = vera.locator(f"#approval-{request.pk}")
    card.wait_for(timeout=5000)
    card.locator("input[name=reason]").fill("Looked at the findings")
    card.locator("button[value=approve]").click()
    deadline = time.monotonic() + 30
    while not fake_github.reviews("acme", "app", 5):
        assert time.monotonic() < deadline, ApprovalRequest.objects.values("status", "error").get()
        time.sleep(0.2)
    time.sleep(1)
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    requested = AuditEvent.objects.get(action="approval.requested")
    assert requested.actor_label == "agent review-bot for bob@example.com"
