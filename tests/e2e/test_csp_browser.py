"""The review page works in Chromium under the Content Security Policy, with no violation."""

from __future__ import annotations

import pytest

from reviews.models import ReviewNode
from tests.e2e.support import card, login
from tests.e2e.test_guided_review_browser import reviewed, shop_repo  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs before any page script and is not itself subject to the page's CSP.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push({directive: e.violatedDirective, blocked: e.blockedURI, sample: e.sample});
});
"""


def _watched(page) -> list[str]:
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type in ("error", "warning") else None)
    page.add_init_script(RECORD_VIOLATIONS)
    return console


def _csp_problems(page, console: list[str]) -> list:
    return page.evaluate("window.__csp") + [m for m in console if "Content Security Policy" in m]


def test_the_review_page_runs_under_the_csp_and_still_updates_live(
    reviewed,  # noqa: F811
    asgi_server,
    browser,
    workspace,
):
    url = f"{asgi_server}/w/{workspace.slug}/reviews/{reviewed.pk}/"
    alice = login(browser, asgi_server, "alice@example.com")
    bob = login(browser, asgi_server, "bob@example.com")
    consoles = {id(p): _watched(p) for p in (alice, bob)}

    response = alice.goto(url)
    policy = response.headers["content-security-policy"]
    assert "script-src 'self' 'nonce-" in policy and "unsafe-eval" not in policy
    assert "frame-ancestors 'none'" in policy
    script_src = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
    assert "unsafe-inline" not in script_src
    nonce = script_src.split("'nonce-")[1].split("'")[0]
    # Browsers hide the nonce attribute from the DOM; the property still has it.
    with_nonce = alice.evaluate(f"[...document.scripts].filter(s => s.nonce === '{nonce}').length")
    # Every script carries it: htmx, its ws extension and the pages' own modules; Mermaid comes
    # with the first diagram opened.
    assert with_nonce == alice.evaluate("document.scripts.length") >= 4
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"

    bob.goto(url)
    bob.evaluate("window.__loadedOnce = true")
    # Mermaid rendered its diagram (it needs its inline <style>) and htmx opened the socket.
    alice.locator("article.cohort details:has(pre.mermaid) > summary").first.click()
    alice.wait_for_selector("pre.mermaid svg", timeout=10000)
    for page in (alice, bob):
        page.wait_for_function("() => window.htmx && document.querySelector('[ws-connect]')")
    assert _csp_problems(alice, consoles[id(alice)]) == []
    assert _csp_problems(bob, consoles[id(bob)]) == []

    # A nit: it sits in the "below threshold" group, which starts closed.
    target = ReviewNode.objects.filter(
        space=reviewed, priority="P3", status="open", duplicate_of__isnull=True
    ).first()
    alice.locator("details.below-threshold > summary").click()
    alice.locator(f"#index-node-{target.pk} a").click()  # to its one card, list or diff
    found = alice.locator(card(target.pk))
    found.locator("input[name=reason]").fill("Handled by the ORM")
    found.locator("button[value=dismiss]").click()  # an htmx POST
    alice.wait_for_selector(card(target.pk, ".node-dismissed"), timeout=5000)
    bob.wait_for_selector(  # over the socket, into Bob's page
        card(target.pk, ".node-dismissed"), state="attached", timeout=5000
    )
    assert bob.evaluate("window.__loadedOnce") is True
    assert _csp_problems(alice, consoles[id(alice)]) == []
    assert _csp_problems(bob, consoles[id(bob)]) == []

    # The policy is enforced, not merely sent: a script injected without the nonce never runs.
    ran = alice.evaluate(
        """() => { const s = document.createElement("script");
                   s.textContent = "window.__injected = true";
                   document.head.appendChild(s); return window.__injected === true; }"""
    )
    assert ran is False
    alice.wait_for_function("() => window.__csp.length > 0")
    assert alice.evaluate("window.__csp")[0]["directive"].startswith("script-src")
