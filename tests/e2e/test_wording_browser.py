"""The worded review page and the rendered report in Chromium: what a person reads, where a
named cohort leads, and no CSP violation or serious accessibility problem on the report."""

from __future__ import annotations

import pytest

from tests.e2e.support import axe_violations, login, screenshot
from tests.e2e.test_csp_browser import RECORD_VIOLATIONS
from tests.reviews.test_page_wording import KEY, URL, worded  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_axis_details_read_as_words_and_a_named_cohort_leads_to_its_card(
    worded,  # noqa: F811
    asgi_server,
    browser,
    workspace,
):
    page = login(browser, asgi_server, "alice@example.com")
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{worded.space_id}/")
    axes = page.locator("#review-axes")
    test_gap = axes.locator("#axis-testGap")
    # One line says what the axis found; its details open from the fold (open at once only
    # for a gate holding the verdict, which a warning is not).
    assert "1 cohort that changes non-test code" in test_gap.inner_text()
    details = test_gap.locator("details.axis-details")
    assert details.get_attribute("open") is None
    details.locator("> summary").click()
    text = test_gap.inner_text()
    assert "Cohorts with no test" in text and "Cart in shop/cart.py" in text
    assert KEY not in page.locator("body").inner_text()  # only in form URLs, never read
    test_gap.locator(f"a[href='#cohort-{KEY[:12]}']").click()
    page.wait_for_function(f"location.hash === '#cohort-{KEY[:12]}'")
    heading = page.locator(f"#cohort-{KEY[:12]}-title").inner_text()
    assert heading == "Cart in shop/cart.py, with 1 more symbol"
    link = page.locator(f"article.node a[href='{URL}']")
    assert link.get_attribute("rel") == "noopener nofollow"
    screenshot(page, "worded-review")


def test_the_report_page_renders_under_the_csp(
    worded,  # noqa: F811
    asgi_server,
    browser,
    workspace,
):
    page = login(browser, asgi_server, "alice@example.com")
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{worded.space_id}/")
    page.click("text=Read the report")
    page.wait_for_selector("#report h1")
    assert page.locator("#report h1").inner_text().startswith("Review: ")
    assert page.evaluate("window.__csp") == [] and console == []
    assert axe_violations(page) == []
    with page.expect_download() as download:
        page.click("text=Download the markdown file")
    assert download.value.suggested_filename == f"quorum-review-{worded.space_id}.md"
    screenshot(page, "report-page")
