"""The diff as a working surface, driven with the keyboard only in real headless Chromium:
j reaches a finding inside the diff, Tab its reason field and Dismiss, n the next file, ? the
list of keys (Esc closes it), and what was reached is announced through the live region."""

from __future__ import annotations

import pytest

from reviews.models import ReviewNode
from tests.e2e.support import axe_violations, login, screenshot
from tests.e2e.test_guided_review_browser import reviewed, shop_repo  # noqa: F401 — fixtures

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Counts the live socket's messages, so the test acts once the page is current (the socket
# re-renders every section when it connects).
COUNT_SOCKET_MESSAGES = """
window.__wsMessages = 0;
document.addEventListener("htmx:wsAfterMessage", () => { window.__wsMessages += 1; });
"""


def _tab_to(page, selector: str, limit: int = 12) -> None:
    """Press Tab until the focused element matches `selector` (keyboard only)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def _announced(page) -> str:
    page.wait_for_function("() => document.getElementById('keys-announcer').textContent !== ''")
    return page.locator("#keys-announcer").inner_text()


def test_reviewing_the_diff_with_the_keyboard_only(reviewed, asgi_server, browser, workspace):  # noqa: F811
    url = f"{asgi_server}/w/{workspace.slug}/reviews/{reviewed.pk}/"
    page = login(browser, asgi_server, "alice@example.com")
    page.add_init_script(COUNT_SOCKET_MESSAGES)
    page.goto(url)
    page.wait_for_function("() => window.__wsMessages >= 1", timeout=10000)
    assert page.locator("#keys-hint-text").inner_text() == "Press ? for keyboard shortcuts"

    inline_cards = page.locator("#review-cohorts article.node.in-diff")
    assert inline_cards.count() >= 1
    first_id = inline_cards.first.get_attribute("id")
    node_pk = int(first_id.removeprefix("diff-node-"))
    node = ReviewNode.objects.get(pk=node_pk)

    # j: the first finding; it is inside the diff, focused and announced.
    page.keyboard.press("j")
    page.wait_for_function("(id) => document.activeElement.id === id", arg=first_id)
    said = _announced(page)
    total = page.evaluate(
        "() => Array.from(document.querySelectorAll('article.node')).filter(c =>"
        " c.classList.contains('in-diff') || !document.getElementById('diff-' + c.id)).length"
    )
    assert said == (
        f"Finding 1 of {total}: {node.priority} {node.title} at {node.path}:{node.start_line}"
    )

    # Tab into the card's reason field, type a reason, Tab to Dismiss and press Enter.
    _tab_to(page, f"#diff-reason-{node_pk}")
    page.keyboard.type("Intended for this sample")
    _tab_to(page, f"#{first_id} button[value=dismiss]")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#{first_id}.node-dismissed", timeout=5000)
    # Its line in the findings index follows (the card is the only card of that finding).
    page.wait_for_selector(
        f"#index-node-{node_pk}[data-status=dismissed]", state="attached", timeout=5000
    )
    assert page.locator(f"#node-{node_pk}").count() == 0
    node.refresh_from_db()
    assert node.status == "dismissed"
    # The keyboard stays on the finding the person acted on.
    page.wait_for_function("(id) => document.activeElement.id === id", arg=first_id, timeout=5000)

    # n: the next file after the one holding that finding.
    files = page.locator("details.diff-file")
    here = page.evaluate(
        f"() => Array.from(document.querySelectorAll('details.diff-file'))"
        f".indexOf(document.getElementById('{first_id}').closest('details.diff-file'))"
    )
    assert files.count() > here + 1, "the sample has a file after the first finding's"
    page.keyboard.press("n")
    expected = files.nth(here + 1)
    page.wait_for_function(
        "(id) => document.activeElement.id === id", arg=expected.get_attribute("id")
    )
    assert expected.evaluate("d => d.open") is True
    # The announcer may still hold the previous action's words for a moment: wait for the move.
    said = f"File {here + 2} of {files.count()}: {expected.get_attribute('data-path')}"
    page.wait_for_function(
        "(text) => document.getElementById('keys-announcer').textContent === text",
        arg=said,
        timeout=5000,
    )

    # ?: the list of keys in a modal dialog; Esc closes it.
    page.keyboard.press("?")
    dialog = page.locator("dialog#keys-help")
    dialog.wait_for(state="visible")
    assert "Next finding" in dialog.inner_text()
    assert page.evaluate("document.activeElement.id") == "keys-help-close"
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")

    # Keys are ignored while typing: "j" in a reason field is text, not navigation.
    reason = page.locator("input[name=reason]:visible").first
    reason.focus()
    before = page.locator("#keys-announcer").inner_text()
    page.keyboard.press("j")
    assert reason.input_value().endswith("j")
    assert page.locator("#keys-announcer").inner_text() == before
    screenshot(page, "diff-keys")
    assert axe_violations(page) == []


def test_marking_a_file_viewed_from_the_tree(reviewed, asgi_server, browser, workspace):  # noqa: F811
    page = login(browser, asgi_server, "alice@example.com")
    page.add_init_script(COUNT_SOCKET_MESSAGES)
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{reviewed.pk}/")
    page.wait_for_function("() => window.__wsMessages >= 1", timeout=10000)
    count = page.locator("#files-viewed-count")
    total = page.locator("#review-files input[type=checkbox]").count()
    # Every file the prepare stage stored is listed.
    stored = reviewed.rounds.get().stats.files
    assert stored and total == len(stored) >= 2
    assert count.inner_text() == f"(0 of {total} file{'s' if total != 1 else ''} viewed)"
    box = page.locator("#review-files input[type=checkbox]").first
    box_id = box.get_attribute("id")
    box.focus()
    page.keyboard.press("Space")
    page.wait_for_function(
        "(t) => document.getElementById('files-viewed-count').textContent.startsWith('(1 of')",
        arg=total,
    )
    assert page.locator(f"#{box_id}").is_checked()
    # The swap keeps the keyboard on the same checkbox.
    assert page.evaluate("document.activeElement.id") == box_id
    # A checkbox takes no typed text: the keys still work from it.
    page.keyboard.press("n")
    page.wait_for_function("() => document.activeElement.matches('details.diff-file')")
    page.reload()
    assert page.locator(f"#{box_id}").is_checked()
