"""Every page in real Chromium: axe finds nothing serious, nothing scrolls sideways on a phone,
the console stays quiet and the browser can compile every form's `pattern`.

One live server, one browser and one seeded workspace serve the whole module: the data is
built once (a reviewed sample change with cohorts, a disagreement and reviewer notes, a GitHub
pull request ready to publish, a pending approval request); the tests then only read it, but
for marking one cohort read.
Screenshots land in test-artifacts/screenshots/<page>-<width>.png.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import override_settings

from tests.e2e.support import ARTIFACTS, chromium_launched, live_server_start
from tests.fixtures import PASSWORD

# The plain marker makes pytest-django create the test database; the tests themselves only
# go through the browser, so the data the module fixture committed stays for all of them.
pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db]

PHONE = 390
DESKTOP = 1280

# Every page a person reaches, by name (the paths come from the seeded data); all but the login
# page are read signed in as the workspace's owner.
PAGES = [
    "login",
    "reviews-list",
    "review",
    "publish",
    "approvals",
    "audit",
    "settings-general",
    "settings-members",
    "settings-reviewers",
    "settings-reviewer",
    "settings-reviewer-new",
    "settings-repositories",
    "settings-guardrails",
    "tokens",
]

# Runs before the page's own scripts; collects what the console alone would not say.
WATCH = """
window.__problems = [];
window.addEventListener("error", (e) => window.__problems.push("error: " + e.message));
"""

INVALID_PATTERNS = """() => [...document.querySelectorAll("[pattern]")].flatMap((el) => {
  const p = el.getAttribute("pattern");
  try { new RegExp(p, "v"); return []; } catch (e) { return [el.name + ": " + p + " (" + e.message + ")"]; }
})"""

WIDEST_ELEMENTS = """(limit) => [...document.querySelectorAll("body *")]
  .filter(e => e.getBoundingClientRect().right > limit && !e.closest(".table-scroll"))
  .map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + "." + e.className
       + " " + Math.round(e.getBoundingClientRect().right))
  .slice(0, 12)"""
OPEN_ALL_DETAILS = (
    "() => document.querySelectorAll('main details').forEach(d => { d.open = true; })"
)
CLOSE_ALL_DETAILS = (
    "() => document.querySelectorAll('main details').forEach(d => { d.open = false; })"
)


def _seed(tmp_path_factory, fake_github) -> dict:
    """The workspace every page shows; returns the paths of the pages."""
    from django.contrib.auth import get_user_model

    from guardrails.services.policies import policy_update
    from reviews.models import ReviewerStream, ReviewNode, ReviewRound
    from reviews.pipeline.runner import run_inline
    from reviews.services.node_recording import node_record
    from reviews.services.nodes import node_dismiss, node_resolve
    from reviews.services.notes import note_record
    from reviews.services.requests import review_request
    from reviews.services.rounds import round_start
    from reviews.services.spaces import (
        pull_request_upsert,
        space_get_or_create,
        space_status_refresh,
    )
    from reviews.services.verdicts import round_finalise
    from reviews.sources.sample_repo import create_sample_repository
    from tests.fakes.gitrepo import GitRepo
    from tests.fixtures import node_payload
    from workspaces.models import Membership, Repository
    from workspaces.services import api_token_create, workspace_create

    def person(email: str):
        return get_user_model().objects.create_user(username=email, email=email, password=PASSWORD)

    alice = person("alice@example.com")
    workspace = workspace_create(name="Acme", owner=alice)
    for role, email in (("reviewer", "bob@example.com"), ("approver", "vera@example.com")):
        Membership.objects.create(workspace=workspace, user=person(email), role=role)
    api_token_create(user=alice, name="ci")

    # The sample change reviewed by the offline analyzers: cohorts with diff previews.
    root = tmp_path_factory.mktemp("repos")
    base, head = create_sample_repository(root / "shop")
    local = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str((root / "shop").resolve())
    )
    reviewed = run_inline(
        review_request(
            repository=local, actor=alice, base=base, head=head, tier="balanced", queue=False
        ).pk
    )
    assert reviewed.state == "finished"
    # Two reviewers disagreeing on one line of the change, and notes they left.
    anchor = {"path": "shop/search.py", "start_line": 20, "end_line": 20}
    impl = ReviewerStream.objects.create(
        round=reviewed, name="implementation", agent="implementation", dimension="implementation"
    )
    qual = ReviewerStream.objects.create(
        round=reviewed, name="quality", agent="quality", dimension="quality"
    )
    node_record(stream=impl, payload=node_payload(priority="P0", anchor=anchor))
    node_record(
        stream=qual,
        payload=node_payload(priority="P3", type="suggestion", anchor=anchor, title="Tidy this"),
    )
    note_record(
        stream=impl,
        kind="comment",
        fields={"body": "Is the page size meant to be fixed?", "path": anchor["path"], "line": 20},
    )
    note_record(stream=impl, kind="ticket", fields={"title": "Cover search", "body": "Add tests."})
    # Settled findings look different from open ones: one dismissed, one resolved.
    settled = ReviewNode.objects.filter(
        round=reviewed, duplicate_of__isnull=True, status="open"
    ).order_by("pk")
    assert settled.count() >= 2
    node_dismiss(node=settled[0], user=alice, reason="Accepted for this script")
    node_resolve(node=settled[1], user=alice, reason="Fixed in the next commit")

    # A GitHub pull request with a finished round: the publish preview plans against it.
    repo = GitRepo.init(tmp_path_factory.mktemp("gh") / "app")
    lines = "".join(f"v{i} = {i}\n" for i in range(1, 31))
    repo.commit("base", {"calc.py": lines}, branch="main")
    repo.commit("change", {"calc.py": lines.replace("v3 = 3\n", "v3 = 3 / 0\n")}, branch="feature")
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull("acme", "app", 5, base="main", head="feature", author="dev")
    github = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/app")
    pr = pull_request_upsert(
        repository=github,
        number=5,
        base_ref="main",
        head_ref="feature",
        head_sha=repo.sha("feature"),
    )
    space = space_get_or_create(pull_request=pr)
    gh_round = round_start(space=space, head_sha=repo.sha("feature"), tier="light")
    stream = gh_round.streams.create(name="implementation", agent="implementation")
    node_record(
        stream=stream,
        payload=node_payload(anchor={"path": "calc.py", "start_line": 3, "end_line": 3}),
        file_lines={"calc.py": 30},
    )
    round_finalise(review_round=gh_round)
    ReviewRound.objects.filter(pk=gh_round.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)

    # Loosening a guardrail waits for another admin: a pending request in the inbox.
    for policy in ("deny", "allow"):
        policy_update(
            workspace=workspace,
            action="prPublish",
            policy=policy,
            approvals_required=1,
            expires_after_minutes=60,
            actor=alice,
        )

    w = f"/w/{workspace.slug}"
    return {
        "login": "/accounts/login/",
        "reviews-list": f"{w}/reviews/",
        "review": f"{w}/reviews/{reviewed.space_id}/",
        "publish": f"{w}/reviews/{space.pk}/publish/",
        "approvals": f"{w}/approvals/",
        "audit": f"{w}/audit/",
        "settings-general": f"{w}/settings/",
        "settings-members": f"{w}/settings/members/",
        "settings-reviewers": f"{w}/settings/reviewers/",
        "settings-reviewer": f"{w}/settings/reviewers/security/",
        "settings-reviewer-new": f"{w}/settings/reviewers/new/",
        "settings-repositories": f"{w}/settings/repositories/",
        "settings-guardrails": f"{w}/settings/guardrails/",
        "tokens": "/account/tokens/",
    }


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker, tmp_path_factory):
    """The seeded workspace served by one live ASGI server; yields (base url, page paths)."""
    from django.conf import settings

    from tests.fakes.clock import FakeClock
    from tests.fakes.github_server import FakeGitHub

    fake_github = FakeGitHub(clock=FakeClock().time).start()
    fake_github.add_token("ghs_app", login="quorum[bot]")
    overrides = override_settings(
        ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, "localhost", "127.0.0.1"],
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        QUORUM_LOCAL_REPO_ROOTS=[tmp_path_factory.getbasetemp()],
        QUORUM_WORKTREE_ROOT=tmp_path_factory.mktemp("worktrees"),
        QUORUM_LLM_PROVIDER="",
        GITHUB_API_URL=fake_github.base_url,
        GITHUB_TOKEN="ghs_app",
        GITHUB_APP_ID="",
    )
    overrides.enable()
    process = None
    try:
        with django_db_blocker.unblock():
            paths = _seed(tmp_path_factory, fake_github)
            process = live_server_start()
            yield f"http://127.0.0.1:{process.port.value}", paths
    finally:
        if process is not None:
            process.terminate()
            process.join(timeout=10)
        with django_db_blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)
        overrides.disable()
        fake_github.stop()


@pytest.fixture(scope="module")
def chromium():
    with chromium_launched() as instance:
        yield instance


@pytest.fixture(scope="module")
def signed_in(site, chromium):
    """One browser context signed in as the workspace's owner, reused by every page."""
    base, _ = site
    context = chromium.new_context(viewport={"width": DESKTOP, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    page.close()
    yield context
    context.close()


def _axe(page) -> list[dict]:
    # Injected from the server's static files: the page's CSP refuses inline script.
    origin = "/".join(page.url.split("/", 3)[:3])
    if not page.evaluate("() => 'axe' in window"):
        page.add_script_tag(url=f"{origin}/static/vendor/axe-core/axe.min.js")
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [(n["target"], n["failureSummary"][:200]) for n in v["nodes"]][:8],
        }
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def _shot(page, name: str, width: int) -> None:
    folder = ARTIFACTS / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}-{width}.png"), full_page=True)


def _open(context, url: str, console: list[str]):
    page = context.new_page()
    page.on(
        "console",
        lambda m: (
            console.append(f"{m.type}: {m.text} @ {m.location.get('url', '')}")
            if m.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.add_init_script(WATCH)
    response = page.goto(url)
    assert response is not None and response.ok, f"{url} answered {response and response.status}"
    page.wait_for_load_state("networkidle")
    return page


@pytest.mark.parametrize("name", PAGES)
def test_page_is_accessible_on_desktop_and_phone(name, site, chromium, signed_in):
    base, paths = site
    context = (
        chromium.new_context(viewport={"width": DESKTOP, "height": 900})
        if name == "login"
        else signed_in
    )
    console: list[str] = []
    page = _open(context, base + paths[name], console)
    try:
        page.evaluate(OPEN_ALL_DETAILS)  # previews, folded groups: axe checks what can be shown
        if name == "review":
            # A cohort already read: its badge and button must keep their contrast too.
            page.locator("article.cohort button:has-text('Mark as read')").first.click()
            page.wait_for_selector("article.cohort.is-read")
            page.wait_for_load_state("networkidle")
            page.evaluate(OPEN_ALL_DETAILS)
            assert page.locator("article.cohort table.diff").count() >= 1
            assert page.locator(".disagreement").count() >= 1
            assert page.locator("#review-notes :is(h3, h4):has-text('Cover search')").count() == 1
        if name == "approvals":
            assert page.locator("[id^=approval-]").count() >= 1
        problems = {"desktop": _axe(page)}
        page.evaluate(CLOSE_ALL_DETAILS)  # the screenshots show the page as it opens
        _shot(page, name, DESKTOP)

        page.set_viewport_size({"width": PHONE, "height": 844})
        page.evaluate(OPEN_ALL_DETAILS)
        widths = page.evaluate(
            "() => [document.documentElement.scrollWidth, document.body.scrollWidth]"
        )
        wide = page.evaluate(WIDEST_ELEMENTS, PHONE)
        problems["phone"] = _axe(page)
        page.evaluate(CLOSE_ALL_DETAILS)  # the screenshots show the page as it opens
        _shot(page, name, PHONE)

        invalid = page.evaluate(INVALID_PATTERNS)
        console += page.evaluate("() => window.__problems")
        report = "\n".join(
            f"{where}: {v['impact']} {v['id']} ({v['help']}): {v['nodes']}"
            for where, found in problems.items()
            for v in found
        )
        assert not report, f"{name}: axe violations\n{report}"
        assert max(widths) <= PHONE, f"{name} is {widths} px wide at {PHONE} px: {wide}"
        assert invalid == [], f"{name}: patterns Chrome cannot compile: {invalid}"
        assert console == [], f"{name}: console errors: {console}"
    finally:
        page.close()
        if name == "login":
            context.close()


def test_the_navigation_is_a_keyboard_menu_on_a_phone(site, signed_in):
    base, paths = site
    page = signed_in.new_page()
    try:
        page.set_viewport_size({"width": PHONE, "height": 844})
        page.goto(base + paths["reviews-list"])
        settings_link = page.locator("header nav a:has-text('Settings')")
        assert not settings_link.is_visible()  # folded away behind the menu
        toggle = page.locator("header summary:has-text('Menu')")
        toggle.focus()
        page.keyboard.press("Enter")
        assert settings_link.is_visible()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE
        _shot(page, "nav-menu-open", PHONE)
        settings_link.focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**/settings/")

        page.set_viewport_size({"width": DESKTOP, "height": 900})
        assert page.locator("header nav a:has-text('Settings')").is_visible()
        assert not page.locator("header summary:has-text('Menu')").is_visible()
    finally:
        page.close()


def test_every_pattern_in_the_forms_compiles_in_chromium(site, signed_in):
    """The reviewer key's pattern is the one the browser checks before the server does."""
    base, paths = site
    page = signed_in.new_page()
    try:
        page.goto(base + paths["settings-reviewer-new"])
        patterns = page.evaluate(
            "() => [...document.querySelectorAll('[pattern]')].map(e => e.getAttribute('pattern'))"
        )
        assert patterns, "the new-reviewer form has a key pattern"
        assert page.evaluate(INVALID_PATTERNS) == []
        key = page.locator("input[name=key]")
        key.fill("Not A Key/")
        assert key.evaluate("(el) => el.validity.patternMismatch") is True
        key.fill("my-reviewer-2")
        assert key.evaluate("(el) => el.validity.patternMismatch") is False
    finally:
        page.close()


def test_the_favicon_answers(site, signed_in):
    base, _ = site
    page = signed_in.new_page()
    try:
        icon = page.request.get(f"{base}/favicon.ico")
        assert icon.ok and icon.headers["content-type"].startswith("image/svg")
        page.goto(f"{base}/accounts/login/")
        href = page.locator("link[rel=icon]").get_attribute("href")
        assert href and page.request.get(base + href).ok
    finally:
        page.close()
