"""The bounded review page in Chromium: "Show more" from the keyboard appends the next cards
and says how many are left; a later cohort's previews load when it is opened."""

from __future__ import annotations

import time

import pytest

from reviews.domain.finding_groups import CARDS_PER_GROUP
from reviews.domain.round_stats import RoundStats
from reviews.models import ReviewNode
from reviews.selectors import EAGER_COHORT_PREVIEWS
from tests.e2e.support import login, screenshot
from tests.reviews.test_review_page_bounds import _cohort, _seed

# Counts the socket's messages; runs before any page script, outside the page's CSP.
WATCH_SOCKET = """
window.__wsMessages = 0;
document.addEventListener("htmx:wsAfterMessage", () => { window.__wsMessages += 1; });
"""

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_show_more_by_keyboard_and_a_cohort_loading_when_opened(
    asgi_server, browser, workspace, review_factory, stream_factory
):
    review_round = review_factory(workspace, tier="balanced")
    _seed(review_round, stream_factory, 4 * (CARDS_PER_GROUP + 4))  # 14 per priority
    cohorts = [_cohort(i, f"pkg/m{i % 3}.py") for i in range(EAGER_COHORT_PREVIEWS + 1)]
    review_round.stats = RoundStats.model_validate({"cohorts": cohorts})
    review_round.save(update_fields=["stats"])
    page = login(browser, asgi_server, "alice@example.com")
    page.add_init_script(WATCH_SOCKET)
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{review_round.space_id}/")
    # On connect the socket brings every section up to date once: let that land first, or it
    # would replace the cards "Show more" appends (a later live update does the same, as a
    # reload would).
    deadline = time.monotonic() + 10
    while not page.evaluate("window.__wsMessages") and time.monotonic() < deadline:
        page.wait_for_timeout(100)

    group = page.locator("#findings-P1")
    assert group.locator("article.node").count() == CARDS_PER_GROUP
    more = group.get_by_role("link", name="Show 4 more P1")
    more.focus()
    page.keyboard.press("Enter")
    group.locator("article.node").nth(CARDS_PER_GROUP + 3).wait_for(timeout=5000)
    assert group.locator("article.node").count() == CARDS_PER_GROUP + 4
    assert page.url.endswith(f"/reviews/{review_round.space_id}/")  # appended, not navigated
    assert group.get_by_role("link", name="Show").count() == 0
    assert page.locator("#findings-P1-status").inner_text() == "Showing 14 of 14 P1 findings."
    # Focus follows to the new cards rather than falling back to the page.
    assert page.evaluate("document.activeElement.id") == "findings-P1-page-2"
    ids = [
        int(i.removeprefix("node-"))
        for i in group.locator("article.node").evaluate_all("els => els.map(e => e.id)")
    ]
    order = ReviewNode.objects.filter(round=review_round, priority="P1").order_by(
        "-confidence", "id"
    )
    assert ids == list(order.values_list("pk", flat=True))

    lazy = page.locator(f"#cohort-{cohorts[-1]['key'][:12]} details.cohort-previews-lazy")
    assert lazy.locator("table.diff").count() == 0
    lazy.locator("> summary").click()
    lazy.locator("table.diff").first.wait_for(timeout=5000)
    assert "os.environ" in lazy.locator("table.diff").first.inner_text()
    screenshot(page, "review-bounds")
