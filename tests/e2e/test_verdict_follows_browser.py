"""The verdict follows a person's decisions, live, in real Chromium (issue 11, must show):
resolving and dismissing every P0/P1 of a Block review moves the header, the list and the
publish preview to Ship, and the audit trail names who changed the verdict."""

from __future__ import annotations

import pytest

from reviews.models import ReviewNode, VerdictChange
from reviews.services.node_recording import node_record
from reviews.services.verdicts import round_finalise
from tests.e2e.support import login, screenshot
from tests.fixtures import node_payload

# PostgreSQL: the live server is a forked process, and two processes writing one SQLite file
# under a browser's concurrent requests lock each other out (page loads time out under load).
pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def block_review(publishable, workspace):
    """The publishable PR with a P0 and a second P1 beside its P1 (and a P3): Block."""
    space, review_round, bob, _ = publishable
    workspace.gated_axes = []  # no CI in this story: only the findings decide
    workspace.save(update_fields=["gated_axes"])
    security = review_round.streams.create(name="security", agent="security")
    for payload in (
        node_payload(
            priority="P0",
            confidence=0.9,
            title="Division by zero on every call",
            anchor={"path": "calc.py", "start_line": 3, "end_line": 3},
        ),
        node_payload(priority="P1", title="Unchecked input", anchor=None),
        node_payload(priority="P3", title="Name the constant", anchor=None),
    ):
        node_record(stream=security, payload=payload, file_lines={"calc.py": 30})
    assert round_finalise(review_round=review_round).level == "block"
    VerdictChange.objects.all().delete()  # the setup's own re-decision is not the story
    return space, bob


_SOCKET_OPEN = (
    "() => document.querySelector('[ws-connect]')['htmx-internal-data']"
    "?.webSocket?.socket?.readyState === 1"
)


def _verdict_row(page) -> str:
    return " ".join(page.locator("#review-header .verdict-row").inner_text().split())


def test_resolving_and_dismissing_every_p0_p1_moves_the_verdict_live(
    block_review, asgi_server, browser, workspace
):
    space, bob_user = block_review
    url = f"{asgi_server}/w/{workspace.slug}/reviews/{space.pk}/"
    watcher = login(browser, asgi_server, "alice@example.com")  # never reloaded
    watcher.goto(url)
    watcher.evaluate("window.__loadedOnce = true")
    watcher.wait_for_selector("#review-header >> text=Block")
    assert "Publishing now would post REQUEST_CHANGES" in _verdict_row(watcher)
    # The reviews list, open in a second tab and never reloaded either.
    listing = watcher.context.new_page()
    listing.goto(f"{asgi_server}/w/{workspace.slug}/reviews/")
    listing.evaluate("window.__loadedOnce = true")
    listing.wait_for_function(_SOCKET_OPEN, timeout=5000)
    assert "✖ Block" in listing.locator(f"#space-row-{space.pk}").inner_text()
    # And the publish preview, in a third tab.
    preview_tab = watcher.context.new_page()
    preview_tab.goto(f"{url}publish/")
    preview_tab.evaluate("window.__loadedOnce = true")
    preview_tab.wait_for_function(_SOCKET_OPEN, timeout=5000)
    assert "event REQUEST_CHANGES (verdict Block)" in preview_tab.inner_text("#publish-preview")

    bob = login(browser, asgi_server, "bob@example.com")
    bob.goto(url)
    deciding = ReviewNode.objects.filter(space=space, priority__in=["P0", "P1"]).order_by(
        "priority", "id"
    )
    steps = [("resolve", deciding[0]), ("dismiss", deciding[1]), ("dismiss", deciding[2])]
    expected_after = ["Hold", "Hold", "Ship"]
    for (action, node), level in zip(steps, expected_after, strict=True):
        card = bob.locator(f"#node-{node.pk}")
        if action == "dismiss":
            card.locator("input[name=reason]").fill("Handled by the caller")
        card.locator(f"button[value={action}]").click()
        status = {"resolve": "resolved", "dismiss": "dismissed"}[action]
        bob.wait_for_selector(f"#node-{node.pk}.node-{status}", timeout=5000)
        # The other person's page follows over the websocket, without a reload.
        watcher.wait_for_function(
            "level => document.querySelector('#review-header .verdict-row')"
            ".innerText.includes(level)",
            arg=level,
            timeout=5000,
        )
    watcher.wait_for_selector("#review-header >> text=no open P0 or P1 finding", timeout=5000)
    listing.wait_for_selector(f"#space-row-{space.pk} >> text=Ship", timeout=5000)
    live_row = " ".join(listing.locator(f"#space-row-{space.pk}").inner_text().split())
    assert "P0 0" in live_row and "P1 0" in live_row
    assert listing.evaluate("window.__loadedOnce") is True
    preview_tab.wait_for_selector("#publish-preview >> text=event APPROVE", timeout=10000)
    live_preview = preview_tab.inner_text("#publish-preview")
    assert "(verdict Ship)" in live_preview and "Why Ship:" in live_preview
    assert preview_tab.evaluate("window.__loadedOnce") is True
    live = _verdict_row(watcher)
    assert "✓ Ship" in live and "Publishing now would post APPROVE" in live
    assert watcher.evaluate("window.__loadedOnce") is True
    screenshot(watcher, "verdict-followed-live")

    # A fresh load says exactly what the live page says.
    fresh = login(browser, asgi_server, "alice@example.com")
    fresh.goto(url)
    assert _verdict_row(fresh) == live

    fresh.goto(f"{asgi_server}/w/{workspace.slug}/reviews/")
    row = " ".join(fresh.locator(f"#space-row-{space.pk}").inner_text().split())
    assert "✓ Ship" in row and row == live_row

    fresh.goto(f"{url}publish/")
    assert fresh.inner_text("#publish-preview") == live_preview
    preview = fresh.locator("#preview-title + p").inner_text()
    assert "event APPROVE (verdict Ship)" in preview
    # The body as GitHub will render it: the heading and the reason in words, not markdown.
    body = fresh.locator("details.plan-body .markdown-body").first.inner_text()
    assert "Quorum review: Ship" in body and "Why Ship: no open P0 or P1 finding" in body

    # The audit trail: each verdict change, with the person who made it.
    fresh.goto(f"{asgi_server}/w/{workspace.slug}/audit/?action=verdict.changed")
    rows = fresh.locator("table tbody tr").all_inner_texts()
    changes = [r for r in rows if "verdict.changed" in r]
    # Three by bob; the fourth, oldest, is the setup's Hold → Block by the system.
    assert ["bob@example.com" in r for r in changes] == [True, True, True, False]
    recorded = [
        (c.old_level, c.new_level, c.actor_id) for c in VerdictChange.objects.order_by("id")
    ]
    assert recorded == [
        ("block", "hold", bob_user.pk),
        ("hold", "hold", bob_user.pk),
        ("hold", "ship", bob_user.pk),
    ]
    fresh.goto(url)
    history = " ".join(fresh.locator("#verdict-changes").text_content().split())
    assert "Hold → Ship by bob@example.com" in history
