"""Two people discuss a finding in real Chromium: the reply and its edit reach the other
page live; a viewer reads the thread but cannot post in it."""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from reviews.models import ThreadMessage
from tests.e2e.support import axe_violations, login, screenshot
from tests.e2e.test_guided_review_browser import reviewed, shop_repo  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WS_OPEN = 'document.addEventListener("htmx:wsOpen", () => { window.__wsOpen = true; });'


def _open(browser, base_url: str, email: str, url: str):
    page = login(browser, base_url, email)
    page.add_init_script(WS_OPEN)
    page.goto(url)
    page.wait_for_function("() => window.__wsOpen === true")
    page.evaluate("window.__loadedOnce = true")
    return page


def test_two_reviewers_discuss_a_finding_live_and_a_viewer_cannot_post(
    reviewed,  # noqa: F811
    asgi_server,
    browser,
    workspace,
    member_factory,
):
    member_factory(workspace, "viewer", "vera@example.com")
    url = f"{asgi_server}/w/{workspace.slug}/reviews/{reviewed.pk}/"
    alice = _open(browser, asgi_server, "alice@example.com", url)
    bob = _open(browser, asgi_server, "bob@example.com", url)
    # A finding's one card: in the diff where it is anchored (ids prefixed "diff-").
    first = alice.locator("article.node").first
    pk = first.get_attribute("data-finding")
    pre = "diff-" if first.get_attribute("id").startswith("diff-") else ""
    thread = f"#{pre}thread-node-{pk}"

    # Alice starts the discussion under the finding.
    alice.locator(f"{thread} > details > summary").click()
    alice.fill(f"#{pre}reply-node-{pk}", "Is this reachable from **outside**?")
    alice.locator(f"{thread} form.thread-reply button[type=submit]").click()
    alice.wait_for_selector(f"{thread} .thread-message strong:text('outside')", timeout=5000)
    message = ThreadMessage.objects.get(subject=f"node:{pk}")
    assert message.author.email == "alice@example.com"

    # Bob's page, never reloaded, shows it within a few seconds, without Alice's edit form.
    bob.wait_for_selector(f"{thread} #{pre}message-{message.pk}", timeout=5000)
    assert "alice@example.com" in bob.locator(f"#{pre}message-{message.pk}").inner_text()
    assert bob.locator(f"#{pre}edit-{message.pk}").count() == 0
    assert bob.evaluate("window.__loadedOnce") is True

    # Alice corrects it; Bob sees the new text marked as edited.
    alice.locator(f"#{pre}message-{message.pk}-edit > summary").click()
    alice.fill(f"#{pre}edit-{message.pk}", "Is this reachable from **outside** the shop?")
    alice.locator(f"#{pre}message-{message.pk}-edit button[type=submit]").click()
    alice.wait_for_selector(f"#{pre}message-{message.pk} .thread-edited", timeout=5000)
    bob.wait_for_selector(f"#{pre}message-{message.pk} .thread-edited", timeout=5000)
    assert "the shop?" in bob.locator(f"#{pre}message-{message.pk} .thread-body").inner_text()
    assert bob.evaluate("window.__loadedOnce") is True

    # A blank reply is refused with the reason, where refusals show.
    bob.fill(f"#{pre}reply-node-{pk}", "   ")
    bob.locator(f"{thread} form.thread-reply button[type=submit]").click()
    bob.wait_for_selector("#errors:has-text('an empty message is not posted')", timeout=5000)

    # Bob answers; Alice's page gets it live too.
    bob.fill(f"#{pre}reply-node-{pk}", "Only through the admin page.")
    bob.locator(f"{thread} form.thread-reply button[type=submit]").click()
    alice.wait_for_selector(f"{thread} .thread-message:has-text('admin page')", timeout=5000)
    assert alice.locator(f"{thread} .thread-message").count() == 2
    # Her saved edit's form stayed closed through the live update.
    assert alice.locator(f"#{pre}message-{message.pk}-edit").get_attribute("open") is None
    assert axe_violations(alice) == []
    screenshot(alice, "thread-discussed")

    # A viewer reads the thread, sees no form, and a forged post is refused and audited.
    vera = _open(browser, asgi_server, "vera@example.com", url)
    assert vera.locator(f"{thread} .thread-message").count() == 2
    assert vera.locator(f"{thread} textarea").count() == 0
    assert "Your role (viewer)" in vera.locator(f"{thread} .thread-read-only").inner_text()
    token = next(c["value"] for c in vera.context.cookies() if c["name"] == "csrftoken")
    forged = vera.request.post(
        f"{url}threads/node:{pk}/",
        form={"body": "sneaky", "csrfmiddlewaretoken": token},
        headers={"Referer": url},
    )
    assert forged.status == 403
    assert ThreadMessage.objects.filter(subject=f"node:{pk}").count() == 2
    denied = AuditEvent.objects.filter(action="permission.denied").latest("pk")
    assert denied.payload["attempted"] == "post in threads"
    assert (
        denied.actor_id
        == ThreadMessage._meta.get_field("author")
        .related_model.objects.get(email="vera@example.com")
        .pk
    )
