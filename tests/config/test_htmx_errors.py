"""What an htmx request gets when it fails: the message where the action was, never a page
swapped into a fragment, a sign-in redirect with the page to come back to, and a request id
shared by the 500 answer, its response header and the logged traceback."""

from __future__ import annotations

import logging
import re

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from config.middleware import RequestIdFilter, request_id_from
from reviews.services.node_recording import node_record
from tests.fixtures import PASSWORD, node_payload
from workspaces.models import Membership

HTMX = {"HX-Request": "true"}
FULL_PAGE = re.compile(r"<!doctype|<html[\s>]", re.IGNORECASE)


@pytest.fixture
def open_node(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "implementation")
    return node_record(stream=stream, payload=node_payload(priority="P1")).node


def _review_url(workspace, node) -> str:
    return f"/w/{workspace.slug}/reviews/{node.space_id}/"


def _resolve_url(workspace, node) -> str:
    return f"{_review_url(workspace, node)}nodes/{node.pk}/"


# -- a rejected settings save ------------------------------------------------------------------


def test_a_rejected_rules_save_is_the_form_with_its_error_once_and_no_saved(
    workspace, alice, client
):
    client.force_login(alice)
    url = f"/w/{workspace.slug}/settings/"
    saved = client.post(url, {"tier": "balanced"}, headers=HTMX)
    assert saved.status_code == 200 and "Saved." in saved.content.decode()

    refused = client.post(url, {"tier": "no-such-tier"}, headers=HTMX)
    html = refused.content.decode()
    assert refused.status_code == 400
    assert "Saved." not in html
    assert html.count("Select a valid choice") == 1  # inline, once
    assert html.lstrip().startswith('<section class="card" id="rules-card"')
    assert not FULL_PAGE.search(html)


def test_a_forbidden_rules_save_is_a_sentence_for_the_error_region(
    workspace, member_factory, client
):
    viewer = member_factory(workspace, "viewer", "vera@example.com")
    client.force_login(viewer)
    refused = client.post(f"/w/{workspace.slug}/settings/", {"tier": "balanced"}, headers=HTMX)
    html = refused.content.decode()
    assert refused.status_code == 403
    assert refused["HX-Retarget"] == "global #errors"
    assert "Your role (viewer) cannot change the workspace rules" in html
    assert "data-toast-dismiss" in html
    assert not FULL_PAGE.search(html)
    # Without htmx the person still gets a whole page.
    plain = client.post(f"/w/{workspace.slug}/settings/", {"tier": "balanced"})
    assert plain.status_code == 403


def test_a_missing_finding_is_a_plain_sentence_naming_no_model(open_node, workspace, alice, client):
    client.force_login(alice)
    url = f"{_review_url(workspace, open_node)}nodes/999999/"
    missing = client.post(url, {"action": "resolve"}, headers=HTMX)
    html = missing.content.decode()
    assert missing.status_code == 404 and missing["HX-Retarget"] == "global #errors"
    assert "not here any more" in html
    assert "ReviewNode" not in html and not FULL_PAGE.search(html)


def test_a_csrf_failure_on_htmx_says_to_reload(workspace, alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    refused = client.post(f"/w/{workspace.slug}/settings/", {"tier": "balanced"}, headers=HTMX)
    assert refused.status_code == 403 and refused["HX-Retarget"] == "global #errors"
    assert "Reload the page" in refused.content.decode()


# -- an expired session ------------------------------------------------------------------------


def test_an_expired_session_on_resolve_redirects_to_sign_in_and_back(
    open_node, workspace, alice, client
):
    client.force_login(alice)
    review = _review_url(workspace, open_node)
    assert client.get(review).status_code == 200
    client.session.flush()  # the session ends server-side
    client.cookies.pop(django_settings.SESSION_COOKIE_NAME, None)

    answer = client.post(
        _resolve_url(workspace, open_node),
        {"action": "resolve"},
        headers={**HTMX, "HX-Current-URL": f"http://testserver{review}"},
    )
    assert answer.status_code == 200
    assert answer["HX-Redirect"] == f"/accounts/login/?next={review.replace('/', '%2F')}"
    assert answer.content == b""  # nothing to swap: no sign-in page inside the list
    open_node.refresh_from_db()
    assert open_node.status == "open"

    signed_in = client.post(
        answer["HX-Redirect"], {"login": "alice@example.com", "password": PASSWORD}
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == review


def test_next_is_dropped_when_the_current_url_is_another_site(open_node, workspace, client):
    answer = client.post(
        _resolve_url(workspace, open_node),
        {"action": "resolve"},
        headers={**HTMX, "HX-Current-URL": "https://elsewhere.example/phish"},
    )
    assert answer["HX-Redirect"] == "/accounts/login/"


def test_an_anonymous_htmx_get_comes_back_to_the_page_it_was_on(workspace, client):
    answer = client.get(
        f"/w/{workspace.slug}/settings/members/",
        headers={**HTMX, "HX-Current-URL": f"http://testserver/w/{workspace.slug}/settings/?tab=1"},
    )
    assert answer["HX-Redirect"] == (
        f"/accounts/login/?next=%2Fw%2F{workspace.slug}%2Fsettings%2F%3Ftab%3D1"
    )


def test_a_signed_in_person_is_never_sent_to_sign_in_by_the_middleware(rf, alice):
    from django.http import HttpResponseRedirect

    from config.middleware import login_redirect_for_htmx

    request = rf.post("/w/x/", headers=HTMX)
    request.user = alice
    assert login_redirect_for_htmx(request, HttpResponseRedirect("/accounts/login/")) is None
    request.user = AnonymousUser()
    assert login_redirect_for_htmx(request, HttpResponseRedirect("/elsewhere/")) is None
    assert login_redirect_for_htmx(request, HttpResponseRedirect("/accounts/login/")) is not None


def test_a_plain_request_still_gets_the_ordinary_redirect(open_node, workspace, client):
    answer = client.post(_resolve_url(workspace, open_node), {"action": "resolve"})
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/?next=")
    assert "HX-Redirect" not in answer


# -- request ids and the 500 answer ------------------------------------------------------------


@pytest.fixture
def resolve_crashes(monkeypatch):
    """Resolving fails with a bug (not a refusal): what a person sees of a server error."""

    def broken(**kwargs):
        raise RuntimeError("resolve exploded")

    monkeypatch.setattr("reviews.services.nodes.node_act", broken)


def _sent_with_id(caplog, request_id: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "request_id", None) == request_id]


def test_a_server_error_on_htmx_shows_the_request_id_that_is_logged(
    open_node, workspace, alice, resolve_crashes, caplog
):
    assert django_settings.DEBUG is False  # the path a server takes
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    with caplog.at_level(logging.ERROR, logger="django.request"):
        answer = client.post(
            _resolve_url(workspace, open_node), {"action": "resolve"}, headers=HTMX
        )
    html = answer.content.decode()
    request_id = answer["X-Request-ID"]
    assert answer.status_code == 500 and answer["HX-Retarget"] == "global #errors"
    assert f"Something went wrong on our side (request {request_id}). It has been logged." in html
    assert "resolve exploded" not in html and not FULL_PAGE.search(html)

    logged = _sent_with_id(caplog, request_id)
    assert logged and logged[0].exc_info and "resolve exploded" in str(logged[0].exc_info[1])
    # The line the configured console handler writes for that record.
    console = next(
        h
        for h in logging.getLogger().handlers
        if any(isinstance(f, RequestIdFilter) for f in h.filters)
    )
    line = console.format(logged[0])
    assert f"[{request_id}]" in line


def test_a_server_error_page_shows_the_id_too(open_node, workspace, alice, resolve_crashes):
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    answer = client.post(
        _resolve_url(workspace, open_node), {"action": "resolve"}, HTTP_X_REQUEST_ID="abc12345-ok"
    )
    html = answer.content.decode()
    assert answer.status_code == 500 and answer["X-Request-ID"] == "abc12345-ok"
    assert "<code>abc12345-ok</code>" in html and "It has been logged." in html
    assert "resolve exploded" not in html


def test_an_api_server_error_is_json_with_the_id(open_node, workspace, alice, resolve_crashes):
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    answer = client.post(
        f"/api/v1/workspaces/{workspace.slug}/reviews/{open_node.space_id}/nodes/"
        f"{open_node.pk}/resolve",
        {},
        content_type="application/json",
    )
    assert answer.status_code == 500
    body = answer.json()
    assert body["code"] == "server_error" and body["request_id"] == answer["X-Request-ID"]
    assert answer["X-Request-ID"] in body["detail"] and "exploded" not in body["detail"]


def test_every_answer_carries_an_id_and_a_sane_incoming_one_is_kept(client):
    fresh = client.get("/healthz")
    assert re.fullmatch(r"[0-9a-f]{16}", fresh["X-Request-ID"])
    assert client.get("/healthz")["X-Request-ID"] != fresh["X-Request-ID"]
    kept = client.get("/healthz", HTTP_X_REQUEST_ID="3f2a9c1e-7d4b-4f0a-9b1e-2c3d4e5f6a7b")
    assert kept["X-Request-ID"] == "3f2a9c1e-7d4b-4f0a-9b1e-2c3d4e5f6a7b"


@pytest.mark.parametrize(
    "incoming", ["", "short", "has space inside", "new\nline-injected", "x" * 65, "<script>aa"]
)
def test_an_insane_incoming_id_is_replaced(incoming):
    assert request_id_from(incoming) != incoming
    assert re.fullmatch(r"[0-9a-f]{16}", request_id_from(incoming))


def test_a_log_line_outside_a_request_has_a_placeholder():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    assert RequestIdFilter().filter(record) and getattr(record, "request_id", None) == "-"


def test_the_client_script_is_on_every_page_under_the_nonce(workspace, alice, client):
    client.force_login(alice)
    html = client.get(f"/w/{workspace.slug}/settings/").content.decode()
    tag = re.search(r'<script src="[^"]*js/htmx_errors\.js" nonce="([^"]+)" defer>', html)
    assert tag and tag.group(1)
    assert Membership.objects.filter(user=alice).exists()
