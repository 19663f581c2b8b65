"""A review page left open while the review runs ends up exactly as a fresh load of it, and
live updates keep what the person did on the page (open details, drawn diagrams, typing)."""

from __future__ import annotations

import difflib
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections

from reviews.models import ReviewNode
from reviews.pipeline.runner import run_inline
from reviews.services import threads
from reviews.services.nodes import node_dismiss
from reviews.services.requests import review_request
from tests.e2e.support import card, login, screenshot
from tests.e2e.test_guided_review_browser import reviewed, shop_repo  # noqa: F401 (fixtures)

# Redis: the review runs in this process and the page is served by another; only a shared
# channel layer carries the live updates between them.
pytestmark = [pytest.mark.browser, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

# Runs before the page's scripts: counts the socket's messages.
COUNT_MESSAGES = """
window.__messages = 0;
document.addEventListener("htmx:wsOpen", () => { window.__wsOpen = true; });
document.addEventListener("htmx:wsAfterMessage", () => { window.__messages += 1; });
"""

# The page as a person sees it, minus what differs between two renders of the same state:
# CSRF token values, the live version, Mermaid's processed mark, "… ago" texts, whitespace,
# the hx-swap-oob mark every section carries (htmx drops it from what it swaps in) and the
# empty style/class attributes htmx's settling leaves behind.
NORMALISED = """() => {
  const root = document.querySelector("#live-review").cloneNode(true);
  root.querySelectorAll("input[name=csrfmiddlewaretoken]").forEach((i) => i.removeAttribute("value"));
  root.querySelectorAll("[data-processed]").forEach((e) => e.removeAttribute("data-processed"));
  root.querySelectorAll("[hx-swap-oob]").forEach((e) => e.removeAttribute("hx-swap-oob"));
  root.querySelectorAll("[style='']").forEach((e) => e.removeAttribute("style"));
  root.querySelectorAll("[class='']").forEach((e) => e.removeAttribute("class"));
  root.querySelectorAll("#live-version").forEach((e) => e.removeAttribute("data-version"));
  root.querySelectorAll("time").forEach((t) => { t.textContent = ""; });
  return root.innerHTML.replace(/\\s+/g, " ").replace(/> </g, "><").trim();
}"""


def _elsewhere(work, *args, **kwargs):
    """Run a service in another thread, as a worker would: Playwright's event loop owns this
    one, and sending to the channel layer from a sync call needs a thread without a loop."""

    def call():
        try:
            return work(*args, **kwargs)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result(timeout=300)


def _settled(page, quiet_seconds: float = 1.5, timeout: float = 30) -> None:
    """Wait until no socket message arrived for `quiet_seconds`."""
    deadline = time.monotonic() + timeout
    seen, since = page.evaluate("window.__messages"), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = page.evaluate("window.__messages")
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_seconds:
            return
    raise AssertionError("the live page never settled")


def _diff(live: str, fresh: str) -> str:
    a, b = live.replace("><", ">\n<").splitlines(), fresh.replace("><", ">\n<").splitlines()
    return "\n".join(list(difflib.unified_diff(a, b, "live", "reload", lineterm="", n=1))[:80])


def test_a_page_open_before_the_review_runs_ends_equal_to_a_fresh_load(
    shop_repo,  # noqa: F811
    alice,
    member_factory,
    workspace,
    asgi_server,
    browser,
):
    repo, base, head = shop_repo
    review_round = _elsewhere(
        review_request,
        repository=repo,
        actor=alice,
        base=base,
        head=head,
        tier="balanced",
        queue=False,
    )
    url = f"{asgi_server}/w/{workspace.slug}/reviews/{review_round.space_id}/"
    page = login(browser, asgi_server, "alice@example.com")
    page.add_init_script(COUNT_MESSAGES)
    page.goto(url)
    page.wait_for_function("() => window.__wsOpen === true && window.__messages >= 1")
    page.evaluate("window.__loadedOnce = true")
    assert page.locator("#review-walkthrough").is_hidden()  # nothing to walk through yet
    assert page.locator("article.cohort").count() == 0

    finished = _elsewhere(run_inline, review_round.pk)  # every stage's events reach the open page
    assert finished.state == "finished"
    page.wait_for_selector("text=Block", timeout=15000)
    # The axes arrive in their own message: on a loaded machine it can trail the verdict by
    # more than the quiet window, so the page is read once they are there too.
    page.wait_for_selector("#axis-apiContract", state="attached", timeout=15000)
    _settled(page)
    assert page.evaluate("window.__loadedOnce") is True  # updated in place, never reloaded
    assert page.locator("article.cohort").count() >= 1  # sections filled in live
    live = page.evaluate(NORMALISED)
    screenshot(page, "live-equals-reload-live")

    fresh_page = page.context.new_page()
    fresh_page.goto(url)
    fresh_page.wait_for_selector("#review-findings")
    fresh = fresh_page.evaluate(NORMALISED)
    assert live == fresh, _diff(live, fresh)

    # A decision after the end (the verdict follows it) keeps the two equal too.
    node = ReviewNode.objects.filter(
        space_id=review_round.space_id, status="open", duplicate_of__isnull=True
    ).first()
    assert node is not None
    _elsewhere(node_dismiss, node=node, user=alice, reason="handled elsewhere")
    page.wait_for_selector(card(node.pk, ".node-dismissed"), state="attached", timeout=5000)
    _settled(page)
    fresh_page.reload()
    fresh_page.wait_for_selector(card(node.pk, ".node-dismissed"), state="attached")
    live, fresh = page.evaluate(NORMALISED), fresh_page.evaluate(NORMALISED)
    assert live == fresh, _diff(live, fresh)

    # A discussion under the finding, then an edit of it, keep them equal as well (the edit
    # form included: the page's person wrote the message).
    thread = threads.thread_get(space=node.space, key=f"node:{node.pk}")
    message = _elsewhere(threads.message_post, thread=thread, user=alice, body="Seen **here**?")
    # The finding's one card holds the thread: in the diff its ids start with "diff-".
    shown = f"#message-{message.pk}, #diff-message-{message.pk}"
    page.wait_for_selector(shown, state="attached", timeout=5000)
    _elsewhere(threads.message_edit, message=message, user=alice, body="Seen **here** before?")
    edited = f"#message-{message.pk} .thread-edited, #diff-message-{message.pk} .thread-edited"
    page.wait_for_selector(edited, state="attached", timeout=5000)
    _settled(page)
    fresh_page.reload()
    fresh_page.wait_for_selector(edited, state="attached")
    live, fresh = page.evaluate(NORMALISED), fresh_page.evaluate(NORMALISED)
    assert f'edit-{message.pk}"' in live
    assert live == fresh, _diff(live, fresh)


def test_live_updates_keep_open_details_drawn_diagrams_and_typed_text(
    reviewed,  # noqa: F811
    alice,
    workspace,
    asgi_server,
    browser,
):
    page = login(browser, asgi_server, "alice@example.com")
    page.add_init_script(COUNT_MESSAGES)
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{reviewed.pk}/")
    page.wait_for_function("() => window.__wsOpen === true && window.__messages >= 1")
    # The diagram library is not loaded until a diagram is opened.
    assert page.evaluate("typeof window.mermaid") == "undefined"
    assert page.locator("script[src*=mermaid]").count() == 0

    diagram = page.locator("article.cohort details:has(pre.mermaid)").first
    diagram.locator("> summary").click()
    diagram.locator("pre.mermaid svg").wait_for(timeout=15000)
    below = page.locator("details.below-threshold")
    below.locator("> summary").click()
    # A reason typed (and still focused) in a finding the update will not touch.
    kept, changed = ReviewNode.objects.filter(
        space=reviewed, status="open", duplicate_of__isnull=True, priority__in=("P2", "P3")
    ).order_by("pk")[:2]
    page.locator(f"#index-node-{kept.pk} a").click()  # to its one card, opened
    reason = page.locator(card(kept.pk)).locator("input[name=reason]")
    reason.fill("Half-typed reas")
    before = page.evaluate("window.__messages")

    # Someone else, elsewhere, dismisses another finding.
    _elsewhere(node_dismiss, node=changed, user=alice, reason="seen elsewhere")
    page.wait_for_selector(card(changed.pk, ".node-dismissed"), state="attached", timeout=5000)
    _settled(page, quiet_seconds=0.5)
    assert page.evaluate("window.__messages") > before
    # The cohorts and findings sections were replaced ...
    assert page.locator("#review-cohorts").count() == 1
    # ... and still show what the person had opened, drawn and typed.
    assert page.locator("details.below-threshold").get_attribute("open") is not None
    assert diagram.get_attribute("open") is not None
    assert diagram.locator("pre.mermaid svg").count() == 1
    assert reason.input_value() == "Half-typed reas"
    assert page.evaluate("document.activeElement && document.activeElement.name") == "reason"
    reason.type("on")  # the cursor is where it was
    assert reason.input_value() == "Half-typed reason"
    screenshot(page, "live-keeps-page-state")
