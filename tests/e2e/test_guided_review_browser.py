"""The guided review in real headless Chromium."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings

from reviews.models import ReviewNode, ReviewSpace
from reviews.pipeline.runner import run_inline
from reviews.services.requests import review_request
from reviews.sources.sample_repo import create_sample_repository
from tests.e2e.support import axe_violations, card, login, screenshot
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shop_repo(settings, tmp_path, workspace):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    settings.QUORUM_LLM_PROVIDER = ""
    base, head = create_sample_repository(tmp_path / "shop")
    repo = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str((tmp_path / "shop").resolve())
    )
    return repo, base, head


@pytest.fixture
def reviewed(shop_repo, alice, member_factory, workspace):
    repo, base, head = shop_repo
    member_factory(workspace, "reviewer", "bob@example.com")
    review_round = run_inline(
        review_request(
            repository=repo, actor=alice, base=base, head=head, tier="balanced", queue=False
        ).pk
    )
    assert review_round.state == "finished"
    return review_round.space


def test_reading_a_review_dismissing_and_a_second_browser_seeing_it_live(
    reviewed, asgi_server, browser, workspace
):
    url = f"{asgi_server}/w/{workspace.slug}/reviews/{reviewed.pk}/"
    alice = login(browser, asgi_server, "alice@example.com")
    bob = login(browser, asgi_server, "bob@example.com")
    for page in (alice, bob):
        page.goto(url)
        page.evaluate("window.__loadedOnce = true")
    alice.wait_for_selector("text=Block")
    # One row for the API contract axis, named in words.
    assert alice.locator("#axis-apiContract").count() == 1
    assert "API contract" in alice.locator("#axis-apiContract").inner_text()
    assert alice.locator("article.cohort").count() >= 1
    assert "code graph" in alice.locator("article.cohort").first.inner_text()

    below = alice.locator("details.below-threshold")
    below.locator("> summary").click()
    assert below.locator("li[data-finding]").first.is_visible()

    # A finding below the threshold (the sample's P3 import and swallowed-exception notes).
    target = (
        ReviewNode.objects.filter(
            space=reviewed, priority__in=("P2", "P3"), duplicate_of__isnull=True
        )
        .order_by("priority", "pk")
        .first()
    )
    # Its line in the index leads to its one card, wherever that is, opened and in view.
    alice.locator(f"#index-node-{target.pk} a").click()
    found = alice.locator(card(target.pk))
    assert found.count() == 1
    found.wait_for(state="visible", timeout=5000)
    found.locator("input[name=reason]").fill("Known and accepted for this script")
    found.locator("button[value=dismiss]").click()
    alice.wait_for_selector(card(target.pk, ".node-dismissed"), timeout=5000)
    alice.wait_for_selector(f"#index-node-{target.pk}[data-status=dismissed]", timeout=5000)

    # Bob's page was never reloaded; the change arrives over the websocket within a second.
    bob.wait_for_selector(card(target.pk, ".node-dismissed"), state="attached", timeout=2000)
    bob.wait_for_selector(
        f"#index-node-{target.pk}[data-status=dismissed]", state="attached", timeout=2000
    )
    assert bob.evaluate("window.__loadedOnce") is True
    assert ReviewNode.objects.get(pk=target.pk).status == "dismissed"
    screenshot(alice, "review-page")

    # A refused action (dismissing it again) shows its message in the page's error region,
    # whatever element asked; the card stays as it is.
    dom_id = found.get_attribute("id")
    alice.evaluate(
        """([url, id]) => htmx.ajax("POST", url, {source: "#" + id, target: "#" + id,
            swap: "outerHTML", values: {action: "dismiss", reason: "again"}})""",
        [f"{url}nodes/{target.pk}/", dom_id],
    )
    alice.wait_for_selector("#errors .message-error", timeout=5000)
    assert "cannot become dismissed" in alice.locator("#errors").inner_text()
    assert alice.locator(card(target.pk, ".node-dismissed")).count() == 1


def test_the_list_and_the_review_page_have_no_serious_accessibility_violations(
    reviewed, asgi_server, browser, workspace
):
    page = login(browser, asgi_server, "alice@example.com")
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/")
    assert axe_violations(page) == []
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{reviewed.pk}/")
    page.wait_for_selector("#review-findings")
    assert axe_violations(page) == []


@pytest.fixture
def live_pipeline(settings, fake_model, request):
    """Reviewers on the fake model, slowed down so findings arrive after the page is open."""
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model, latency=1.0)
    if django_settings.REDIS_URL:  # the full stack: the pipeline runs on a Celery worker
        request.getfixturevalue("worker_factory")()


def test_starting_a_review_from_the_form_and_watching_findings_arrive(
    shop_repo, live_pipeline, asgi_server, browser, workspace, alice
):
    repo, base, head = shop_repo
    page = login(browser, asgi_server, "alice@example.com")
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/")
    form = page.locator("section[aria-labelledby=new-review-title] form")
    form.locator("select[name=repository]").select_option(str(repo.pk))
    form.locator("input[name=base]").fill(base)
    form.locator("input[name=head]").fill(head)
    form.locator("button:has-text('Start review')").click()
    try:
        page.wait_for_url("**/reviews/*/", timeout=15000)
    except Exception:
        raise AssertionError(page.locator("main").inner_text()[-1500:]) from None
    page.evaluate("window.__loadedOnce = true")
    space = ReviewSpace.objects.get()
    initial = page.locator("article.node").count()
    page.wait_for_function(
        # A function, not an expression string: Playwright evals strings, which the CSP forbids.
        f"() => document.querySelectorAll('article.node').length > {initial}",
        timeout=60000,
    )
    page.wait_for_selector("ol.ladder li.current:has-text('Verdict ready')", timeout=90000)
    assert page.evaluate("window.__loadedOnce") is True  # live updates, no reload
    assert ReviewNode.objects.filter(space=space, stream__name="implementation").exists()
    assert page.locator("article.cohort").count() >= 1  # the cohorts arrived live too
    screenshot(page, "review-started-live")


@pytest.fixture
def model_reviewed(shop_repo, settings, fake_model, alice):
    """A thorough round on the fake model with the original request (before any browser: the
    round runs here, outside Playwright's event loop)."""
    repo, base, head = shop_repo
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model)
    review_round = run_inline(
        review_request(
            repository=repo,
            actor=alice,
            base=base,
            head=head,
            tier="thorough",
            original_request=scenario.ORIGINAL_REQUEST,
            queue=False,
        ).pk
    )
    assert review_round.state == "finished", review_round.error
    return review_round


def test_a_model_reviewed_page_shows_the_requirements_table_and_the_leads_walkthrough(
    model_reviewed, asgi_server, browser, workspace
):
    """What the structured answers add to the page, read in Chromium: the requirements table
    with each requested feature and the lead's tour; axe finds nothing serious and nothing
    scrolls sideways on a phone."""
    review_round = model_reviewed
    page = login(browser, asgi_server, "alice@example.com")
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{review_round.space_id}/")
    table = page.locator("#requirements-check table")
    rows = table.locator("tbody tr")
    assert rows.count() == len(scenario.REQUIREMENT_ROWS)
    for row in scenario.REQUIREMENT_ROWS:
        assert row["requirement"] in table.inner_text()
    steps = page.locator("#review-walkthrough ol.walkthrough-steps > li")
    assert [s.locator("strong").inner_text() for s in steps.all()] == [
        s["title"] for s in scenario.WALKTHROUGH_STEPS
    ]
    assert "shop/routes.py" not in steps.all()[1].inner_text()  # an invented path is dropped
    page.evaluate("() => document.querySelectorAll('main details').forEach(d => d.open = true)")
    assert axe_violations(page) == []
    screenshot(page, "review-model-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert axe_violations(page) == []
    screenshot(page, "review-model-390")
