"""Publishing as two people in real Chromium."""

from __future__ import annotations

import time

import pytest
from django.conf import settings as django_settings

from guardrails.models import ApprovalRequest, AuditEvent
from reviews.models import ReviewSpace
from tests.e2e.support import login, screenshot
from workspaces.services import api_token_create

# PostgreSQL: the live server is a forked process, and two processes writing one SQLite file
# under a browser's concurrent requests lock each other out.
pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


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
    vera.wait_for_selector("#own-presence")  # her socket counts her as present

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
    bob.wait_for_selector("text=Published to GitHub →", timeout=10000)
    assert bob.evaluate("window.__loadedOnce") is True  # arrived live, no reload
    link = bob.locator("#publish-state a").get_attribute("href")
    assert link == fake_github.reviews("acme", "app", 5)[0]["html_url"]
    notice = bob.locator("#published-notice").inner_text()
    assert "requested by bob@example.com" in notice and "approved by vera@example.com" in notice
    bob.wait_for_selector(".ladder li[aria-current=step]:has-text('Completed')", timeout=10000)
    assert ReviewSpace.objects.get(pk=space.pk).status == "completed"
    assert bob.locator("text=Publish to GitHub…").count() == 0
    screenshot(bob, "published-review")

    # Asking again is refused, on the page and through the API, whatever the selection.
    bob.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{space.pk}/publish/")
    bob.wait_for_selector(f"text=Round 1 was already published to GitHub: {link}")
    assert bob.locator("button:has-text('Request publish')").count() == 0
    _, token = api_token_create(user=ApprovalRequest.objects.get().requester, name="ci")
    for selection in ("consensus", "all_open"):
        again = bob.request.post(
            f"{asgi_server}/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/publish-requests",
            data={"selection": selection, "approve_on_ship": selection == "all_open"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert again.status == 409
        assert again.json()["detail"].startswith(f"Round 1 was already published to GitHub: {link}")
    assert len(fake_github.reviews("acme", "app", 5)) == 1
    assert ApprovalRequest.objects.count() == 1

    vera.goto(f"{asgi_server}/w/{workspace.slug}/audit/")
    trail = vera.locator("main").inner_text()
    for action in ("approval.requested", "approval.approved", "prPublish.executed"):
        assert action in trail
    assert "bob@example.com" in trail and "vera@example.com" in trail
    export = vera.request.get(
        f"{asgi_server}/w/{workspace.slug}/audit/export.csv?action=prPublish.executed"
    ).text()
    assert "prPublish.executed" in export and "vera@example.com" in export and link in export
    # One executed event for the one GitHub review, by the app, naming both people.
    [executed] = AuditEvent.objects.filter(action__endswith=".executed")
    assert executed.actor_kind == "app" and executed.actor_label == "quorum (app identity)"
    assert executed.payload["requester"] == "bob@example.com"
    assert executed.payload["approvers"] == ["vera@example.com"]
