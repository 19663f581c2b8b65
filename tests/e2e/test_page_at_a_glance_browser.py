"""The review page read in thirty seconds, in real Chromium at a laptop's 1366 × 768.

A thorough round on the fake model over the sample change (findings at every priority, a P0
among them, some anchored in the diff and some not): the page stays short, what to fix before
merge sits in the first viewport, each finding has one card, axe finds nothing serious and a
phone does not scroll sideways.
"""

from __future__ import annotations

import pytest

from reviews.models import ReviewNode
from reviews.pipeline.runner import run_inline
from reviews.selectors import node_view
from reviews.services.requests import review_request
from reviews.sources.sample_repo import create_sample_repository
from tests.e2e.support import axe_violations, login, screenshot
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MAX_HEIGHT = 5000


@pytest.fixture
def reviewed(settings, tmp_path, workspace, fake_model, alice):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model)
    base, head = create_sample_repository(tmp_path / "shop")
    repo = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str((tmp_path / "shop").resolve())
    )
    review_round = run_inline(
        review_request(
            repository=repo, actor=alice, base=base, head=head, tier="thorough", queue=False
        ).pk
    )
    assert review_round.state == "finished", review_round.error
    return review_round


def test_the_page_is_short_leads_with_what_to_fix_and_shows_each_finding_once(
    reviewed, asgi_server, browser, workspace
):
    findings = ReviewNode.objects.filter(round=reviewed, duplicate_of__isnull=True).order_by("pk")
    blocking = [
        n
        for n in findings
        if n.priority in ("P0", "P1") and n.status in ("open", "consensus_ready")
    ]
    assert any(n.priority == "P0" for n in blocking)  # the scenario has a P0 to lead with
    page = login(browser, asgi_server, "alice@example.com")
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{reviewed.space_id}/")

    height = page.evaluate("document.documentElement.scrollHeight")
    print(f"page height at 1366 px: {height} px")
    screenshot(page, "review-at-a-glance-1366")
    assert height <= MAX_HEIGHT, f"the page is {height} px tall"

    # What to fix before merge: one line per open P0/P1, the first P0 inside the first viewport.
    to_fix = page.locator("#to-fix li")
    assert to_fix.count() == len(blocking)
    first_p0 = page.locator("#to-fix li", has_text="P0").first
    box = first_p0.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 768, box
    # Its link lands on the finding's one card.
    first_p0.locator("a").first.click()
    target = page.evaluate("location.hash")
    assert page.locator(f"{target}").count() == 1

    # Each finding once: one card per finding in the whole document.
    for node in findings:
        cards = page.locator(f"article.node[data-finding='{node.pk}']")
        assert cards.count() == 1, f"{node.title}: {cards.count()} cards"
    # The findings list is an index: one line per finding, each a link to its card.
    index = page.locator("#review-findings li[data-finding]")
    assert index.count() == findings.count()

    # The index filters by reviewer (and priority, status): lines and list cards follow.
    by_bandit = [n for n in findings if "bandit" in node_view(n, []).reviewers]
    assert 0 < len(by_bandit) < findings.count()
    page.select_option("#finding-filter select[name=reviewer]", "bandit")
    assert index.locator("visible=true").count() == len(by_bandit)
    assert page.locator("#finding-filter-count").inner_text() == (
        f"{len(by_bandit)} of {findings.count()} shown"
    )
    page.select_option("#finding-filter select[name=status]", "dismissed")
    assert index.locator("visible=true").count() == 0
    page.select_option("#finding-filter select[name=reviewer]", "")
    page.select_option("#finding-filter select[name=status]", "")
    assert index.locator("visible=true").count() == findings.count()

    page.evaluate("() => document.querySelectorAll('main details').forEach(d => d.open = true)")
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "review-at-a-glance-390")
