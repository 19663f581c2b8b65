"""Publishing as two people in real Chromium (issue: guardrails, must show)."""

from __future__ import annotations

import time

import pytest
from django.conf import settings as django_settings

from guardrails.models import ApprovalRequest
from tests.e2e.support import login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def executor(fake_github, request):
    """Where approved requests execute: a Celery worker in the full stack, else the server."""
    if django_settings.REDIS_URL:
        request.getfixturevalue("worker_factory")(
            GITHUB_API_URL=fake_github.base_url, GITHUB_TOKEN="ghs_app", GITHUB_APP_ID=""
        )


def test_request_approve_publish_and_audit(
    publishable, executor, asgi_server, browser, fake_github, workspace
):
    space, _, _, _ = publishable
    vera = login(browser, asgi_server, "vera@example.com")
    vera.goto(f"{asgi_server}/w/{workspace.slug}/approvals/")
    vera.wait_for_selector("text=1 approver connected")

    bob = login(browser, asgi_server, "bob@example.com")
    bob.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{space.pk}/")
    bob.click("text=Publish to GitHub…")
    bob.wait_for_selector("text=What would be posted")
    bob.click("button:has-text('Request publish')")
    bob.wait_for_selector("text=waiting for an approver")
    bob.evaluate("window.__loadedOnce = true")

    request = ApprovalRequest.objects.get()
    card = vera.locator(f"#approval-{request.pk}")
    card.wait_for(timeout=5000)  # arrived live in the inbox
    assert "bob@example.com" in card.inner_text()
    card.locator("input[name=reason]").fill("Checked the findings")
    card.locator("button[value=approve]").click()

    deadline = time.monotonic() + 30
    while not fake_github.reviews("acme", "app", 5):
        state = ApprovalRequest.objects.values("status", "error").get(pk=request.pk)
        assert time.monotonic() < deadline, f"no review reached GitHub: {state}"
        time.sleep(0.2)
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    bob.wait_for_selector("text=Published to GitHub", timeout=10000)
    assert bob.evaluate("window.__loadedOnce") is True
    link = bob.locator("#publish-state a").get_attribute("href")
    assert link == fake_github.reviews("acme", "app", 5)[0]["html_url"]
    screenshot(bob, "published-review")

    vera.goto(f"{asgi_server}/w/{workspace.slug}/audit/")
    trail = vera.locator("main").inner_text()
    for action in ("approval.requested", "approval.approved", "prPublish.executed"):
        assert action in trail
    assert "bob@example.com" in trail and "vera@example.com" in trail
    export = vera.request.get(
        f"{asgi_server}/w/{workspace.slug}/audit/export.csv?action=prPublish.executed"
    ).text()
    assert "prPublish.executed" in export and "vera@example.com" in export and link in export
