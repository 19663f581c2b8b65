"""htmx requests that fail, in real Chromium: the person sees what happened where they acted."""

from __future__ import annotations

import logging
import re

import pytest

from config.middleware import RequestIdFilter
from reviews.models import ReviewNode
from reviews.services.node_recording import node_record
from tests.e2e.support import login, screenshot
from tests.fixtures import PASSWORD, node_payload
from workspaces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOAST = "#errors .message-error"


@pytest.fixture
def open_node(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "implementation")
    return node_record(stream=stream, payload=node_payload(priority="P1")).node


@pytest.fixture
def resolve_crashes(monkeypatch):
    """Set up before the live server forks, which inherits it: resolving hits a bug."""

    def broken(**kwargs):
        raise RuntimeError("resolve exploded")

    monkeypatch.setattr("reviews.services.nodes.node_act", broken)


@pytest.fixture
def server_log(tmp_path, settings):
    """The live server's log lines in a file, formatted as the console handler does. Set up
    before the server process forks: a handler on the root logger for a server that inherits
    the configured logging as is, and the same handler in LOGGING for one whose start applies
    LOGGING again (which resets the root logger's handlers)."""
    path = tmp_path / "server.log"
    plain = settings.LOGGING["formatters"]["plain"]["format"]
    settings.LOGGING = {
        **settings.LOGGING,
        "handlers": {
            **settings.LOGGING["handlers"],
            "test_file": {
                "class": "logging.FileHandler",
                "filename": str(path),
                "formatter": "plain",
                "filters": ["request_id"],
            },
        },
        "root": {**settings.LOGGING["root"], "handlers": ["console", "test_file"]},
    }
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(plain))
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    yield path
    root.removeHandler(handler)
    handler.close()


def _save_rules(page) -> None:
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("#rules-card button[type=submit]")
    answer.value.finished()
    page.wait_for_load_state("networkidle")


def test_a_rejected_settings_save_shows_why_and_no_stale_saved(
    asgi_server, browser, workspace, member_factory
):
    member_factory(workspace, "admin", "adam@example.com")
    page = login(browser, asgi_server, "adam@example.com")
    page.goto(f"{asgi_server}/w/{workspace.slug}/settings/")
    page.check("input[name=tier][value=balanced]")
    _save_rules(page)
    assert page.locator("#rules-card").get_by_text("Saved.").is_visible()

    # A value the server refuses (400): the form comes back with its error, once, in place.
    page.evaluate(
        """() => { const r = document.querySelector('input[name=tier][value=thorough]');
                   r.value = 'no-such-tier'; r.checked = true; }"""
    )
    _save_rules(page)
    card = page.locator("#rules-card")
    assert card.get_by_text("Saved.").count() == 0
    assert card.inner_text().count("Select a valid choice") == 1
    assert page.locator(TOAST).count() == 0
    screenshot(page, "htmx-settings-400")

    # Saved again, then the role is lowered meanwhile (403): a sentence in the error region,
    # and the "Saved." of the previous save is gone.
    page.goto(f"{asgi_server}/w/{workspace.slug}/settings/")
    _save_rules(page)
    assert page.locator("#rules-card").get_by_text("Saved.").is_visible()
    Membership.objects.filter(user__email="adam@example.com").update(role="viewer")
    _save_rules(page)
    toast = page.locator(TOAST)
    toast.wait_for(timeout=5000)
    assert "Your role (viewer) cannot change the workspace rules" in toast.inner_text()
    assert toast.get_attribute("role") == "alert"
    assert page.get_by_text("Saved.").count() == 0
    assert page.locator("main .topbar").count() == 0
    screenshot(page, "htmx-settings-403")

    page.click("#errors [data-toast-dismiss]")
    assert page.locator("#errors").inner_html().strip() == ""


def test_a_network_failure_says_the_server_could_not_be_reached(
    asgi_server, browser, workspace, alice
):
    page = login(browser, asgi_server, "alice@example.com")
    page.goto(f"{asgi_server}/w/{workspace.slug}/settings/")
    _save_rules(page)
    assert page.get_by_text("Saved.").is_visible()

    page.route("**/settings/", lambda route: route.abort("internetdisconnected"))
    page.click("#rules-card button[type=submit]")
    toast = page.locator(TOAST)
    toast.wait_for(timeout=5000)
    assert "Could not reach the server" in toast.inner_text()
    assert page.get_by_text("Saved.").count() == 0

    # The next request that succeeds takes the message away.
    page.unroute("**/settings/")
    _save_rules(page)
    assert page.locator(TOAST).count() == 0
    assert page.get_by_text("Saved.").is_visible()


def test_an_expired_session_on_resolve_signs_in_and_comes_back(
    open_node, asgi_server, browser, workspace, alice
):
    page = login(browser, asgi_server, "alice@example.com")
    review = f"{asgi_server}/w/{workspace.slug}/reviews/{open_node.space_id}/"
    page.goto(review)
    card = page.locator(f"#node-{open_node.pk}")
    card.wait_for()

    page.context.clear_cookies(name="sessionid")  # the session is gone
    card.locator("button[value=resolve]").click()
    page.wait_for_url(re.compile(r"/accounts/login/\?next="), timeout=10000)
    assert page.locator("main .topbar").count() == 0  # the page was left, not filled
    assert f"next=%2Fw%2F{workspace.slug}%2Freviews%2F{open_node.space_id}%2F" in page.url

    page.fill("input[name=login]", "alice@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(review, timeout=10000)
    page.locator(f"#node-{open_node.pk}").wait_for()
    assert ReviewNode.objects.get(pk=open_node.pk).status == "open"  # nothing was done unseen


def test_a_server_error_shows_the_request_id_the_server_logged(
    resolve_crashes, server_log, open_node, asgi_server, browser, workspace, alice
):
    page = login(browser, asgi_server, "alice@example.com")
    page.goto(f"{asgi_server}/w/{workspace.slug}/reviews/{open_node.space_id}/")
    card = page.locator(f"#node-{open_node.pk}")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        card.locator("button[value=resolve]").click()
    assert answer.value.status == 500
    request_id = answer.value.headers["x-request-id"]
    toast = page.locator(TOAST)
    toast.wait_for(timeout=5000)
    assert toast.inner_text() == (
        f"Something went wrong on our side (request {request_id}). It has been logged."
    )
    assert card.locator("button[value=resolve]").is_visible()  # the card is intact
    screenshot(page, "htmx-server-error")
    logged = server_log.read_text()
    assert f"[{request_id}] Internal Server Error: /w/{workspace.slug}/reviews/" in logged
