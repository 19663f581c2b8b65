"""Every page form and filter, walked with malformed input: NUL, a lone surrogate (as the bytes a
client can send, which are not UTF-8), huge numbers and unknown choices, one field at a time.
No answer may be a server error, and every answer (streamed ones too) must end.

The walker signs in as the workspace's owner, follows the site's own links from the workspace's
pages, and reads the forms out of the HTML as a browser would; a new page or form is walked
without changing this test."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import quote, urljoin, urlsplit

import pytest

from guardrails.presence import presence_touch
from reviews.services.publishing import publish_request

#: What a hostile or broken client sends, percent-encoded as it goes on the wire.
BAD_VALUES = {
    "nul": "a%00b",
    "lone surrogate": "%ED%A0%80",  # U+D800 as CESU bytes: not UTF-8
    "huge number": "9" * 400,
    "huge negative": "-" + "9" * 30,
    "float overflow": "1e400",
    "unknown choice": "no-such-choice",
}
# Pages a crawl would not reach by links alone (reached by typing, or shown only with data).
SEEDS = (
    "/",
    "/new/",
    "/account/tokens/",
    "/w/{slug}/reviews/",
    "/w/{slug}/reviews/{space}/",
    "/w/{slug}/reviews/{space}/report/",
    "/w/{slug}/reviews/{space}/findings/",
    "/w/{slug}/approvals/",
    "/w/{slug}/audit/",
    "/w/{slug}/audit/export.csv",
    "/w/{slug}/audit/export.json",
    "/w/{slug}/spend/",
    "/w/{slug}/settings/",
    "/w/{slug}/settings/prices/",
    "/w/{slug}/settings/budgets/",
    "/w/{slug}/settings/github-handle/",
    "/w/{slug}/settings/members/",
    "/w/{slug}/settings/reviewers/",
    "/w/{slug}/settings/reviewers/new/",
    "/w/{slug}/settings/reviewers/quality/",
    "/w/{slug}/settings/repositories/",
    "/w/{slug}/settings/guardrails/",
)
# Forms a page shows only in states the fixture's review is not in (a round running, a
# request waiting for its original request, a publish waiting for approval): their fields as
# the templates name them.
EXTRA_FORMS = (
    ("/w/{slug}/reviews/{space}/request/", [("original_request", "Add search.")], set()),
    ("/w/{slug}/reviews/{space}/rerun/", [("round", "1")], set()),
    ("/w/{slug}/reviews/{space}/cancel/", [("round", "1")], set()),
    (
        "/w/{slug}/approvals/{request}/decide/",
        [("decision", "deny"), ("reason", "no"), ("confirm", "yes")],
        {"decision"},
    ),
)
# Links the walker does not follow: leaving, or the admin site (Django's own).
SKIP_PREFIXES = ("/accounts/logout", "/admin/", "/static/", "/api/", "/webhooks/")
DESTRUCTIVE = ("delete", "disconnect", "purge", "remove", "revoke", "logout", "withdraw")
PAGE_LIMIT = 80
SLOW = 10.0  # seconds: an answer slower than this counts as a hang


@dataclass
class Form:
    page: str
    action: str
    method: str
    fields: list[tuple[str, str]] = field(default_factory=list)  # (name, default value)
    choices: set[str] = field(default_factory=set)  # names of selects, radios, checkboxes


class _Forms(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__()
        self.page, self.forms, self.links = page, [], []
        self._form: Form | None = None
        self._select: str | None = None
        self._select_value: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "form":
            action = urljoin(self.page, a.get("action") or self.page)
            self._form = Form(self.page, action, (a.get("method") or "get").lower())
            self.forms.append(self._form)
        if self._form is None:
            return
        name = a.get("name")
        if tag == "input" and name:
            kind = a.get("type", "text").lower()
            if kind in ("checkbox", "radio"):
                self._form.choices.add(name)
                if "checked" in a or not any(n == name for n, _ in self._form.fields):
                    self._form.fields.append((name, a.get("value", "on")))
            elif kind not in ("submit", "button", "image", "reset", "file"):
                self._form.fields.append((name, a.get("value", "")))
        if tag == "button" and name:
            self._form.fields.append((name, a.get("value", "")))
        if tag == "select" and name:
            self._select, self._select_value = name, None
            self._form.choices.add(name)
        first_or_selected = self._select_value is None or "selected" in a
        if tag == "option" and self._select is not None and first_or_selected:
            self._select_value = a.get("value", "")
        if tag == "textarea" and name:
            self._textarea = name
            self._form.fields.append((name, ""))

    def handle_endtag(self, tag):
        if tag == "select" and self._select is not None and self._form is not None:
            self._form.fields.append((self._select, self._select_value or ""))
            self._select = None
        if tag == "textarea":
            self._textarea = None
        if tag == "form":
            self._form = None


def _encode(pairs: list[tuple[str, str]], raw: dict[int, str]) -> str:
    """application/x-www-form-urlencoded, with the fields at the indexes in `raw` sent as the
    given already-encoded bytes."""
    return "&".join(
        f"{quote(name, safe='')}={raw[i] if i in raw else quote(value, safe='')}"
        for i, (name, value) in enumerate(pairs)
    )


def _consume(response) -> None:
    """Read a streamed body to its end. One that fails after its headers were sent is what a
    browser sees as a download that never finishes: counted as a server error."""
    if getattr(response, "streaming", False):
        try:
            for _ in response.streaming_content:
                pass
        except Exception:
            response.status_code = 599


def _request(client, method: str, url: str, body: str = ""):
    started = time.monotonic()
    if method == "post":
        response = client.post(url, body, content_type="application/x-www-form-urlencoded")
    else:
        sep = "&" if "?" in url else "?"
        response = client.get(f"{url}{sep}{body}" if body else url)
    _consume(response)
    return response, time.monotonic() - started


def _crawl(client, seeds: list[str]) -> tuple[list[str], list[Form]]:
    queue, seen, forms = list(seeds), set(), []
    while queue and len(seen) < PAGE_LIMIT:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url)
        _consume(response)
        assert response.status_code < 500, f"GET {url}: {response.status_code}"
        if "text/html" not in response.get("Content-Type", "") or response.status_code != 200:
            continue
        parser = _Forms(url)
        parser.feed(response.content.decode())
        forms.extend(parser.forms)
        for href in parser.links:
            target = urljoin(url, href)
            parts = urlsplit(target)
            if (
                parts.netloc
                or not parts.path.startswith("/")
                or parts.path.startswith(SKIP_PREFIXES)
            ):
                continue
            if any(word in parts.path for word in DESTRUCTIVE):
                continue
            link = parts.path + (f"?{parts.query}" if parts.query else "")
            if link not in seen:
                queue.append(link)
    return sorted(seen), forms


@pytest.mark.postgres  # SQLite stores a NUL: PostgreSQL is where it turned into a 500
@pytest.mark.django_db(transaction=True)
@pytest.mark.long
def test_every_form_and_filter_refuses_malformed_input_without_a_server_error(
    publishable, alice, client_for, workspace
):
    space, _, bob, vera = publishable
    presence_touch(channel_name="vera", workspace_id=space.workspace_id, user_id=vera.pk)
    client = client_for(alice)
    client.raise_request_exception = False  # a server error is an answer here: counted
    seeds = [s.format(slug=workspace.slug, space=space.pk) for s in SEEDS]
    pending = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    pages, forms = _crawl(client, seeds)
    assert len(pages) >= 30 and len(forms) >= 25, (len(pages), len(forms))
    for path, fields, choices in EXTRA_FORMS:
        action = path.format(slug=workspace.slug, space=space.pk, request=pending.request.pk)
        forms.append(Form(action, action, "post", [("csrfmiddlewaretoken", ""), *fields], choices))
    forms = [f for f in forms if not urlsplit(f.action).path.startswith(SKIP_PREFIXES)]

    # GET filters and query parameters of the pages themselves: the same values on each.
    failures: list[str] = []
    probes = 0
    for url in pages:
        parts = urlsplit(url)
        params = [p.split("=", 1)[0] for p in parts.query.split("&") if p] or ["q", "page"]
        for name in params:
            for label, raw in BAD_VALUES.items():
                response, took = _request(client, "get", f"{parts.path}?{name}={raw}")
                probes += 1
                if response.status_code >= 500 or took > SLOW:
                    failures.append(f"GET {parts.path} {name}={label}: {response.status_code}")

    # Forms: one field at a time, the rest as the page filled them in; destructive ones last.
    forms.sort(key=lambda f: any(w in f.action for w in DESTRUCTIVE))
    walked: set[tuple[str, str, tuple[str, ...]]] = set()
    for form in forms:
        key = (form.method, urlsplit(form.action).path, tuple(n for n, _ in form.fields))
        if key in walked:
            continue
        walked.add(key)
        path = urlsplit(form.action).path
        for index, (name, _) in enumerate(form.fields):
            if name == "csrfmiddlewaretoken":
                continue
            for label, raw in BAD_VALUES.items():
                if label == "unknown choice" and name not in form.choices:
                    continue
                body = _encode(form.fields, {index: raw})
                response, took = _request(client, form.method, path, body)
                probes += 1
                if response.status_code >= 500 or took > SLOW:
                    failures.append(
                        f"{form.method.upper()} {path} {name}={label}: "
                        f"{response.status_code} in {took:.1f}s"
                    )
    print(f"walked {len(pages)} pages, {len(walked)} forms, {probes} requests")
    assert probes > 300, probes
    assert not failures, "\n".join(failures)


@pytest.mark.django_db
def test_a_nul_is_refused_with_a_message_before_the_view_and_the_export_starts(
    workspace, alice, client_for
):
    client = client_for(alice)
    page = client.get(f"/w/{workspace.slug}/audit/?actor=a%00b")
    assert page.status_code == 400
    assert "contains a NUL character, which no field accepts" in page.content.decode()
    export = client.get(f"/w/{workspace.slug}/audit/export.csv?action=%00")
    assert export.status_code == 400 and not export.streaming
    htmx = client.post(
        f"/w/{workspace.slug}/settings/guardrails/",
        "action_class=prPublish&policy=deny%00",
        content_type="application/x-www-form-urlencoded",
        HTTP_HX_REQUEST="true",
    )
    assert htmx.status_code == 400 and "policy" in htmx.content.decode()
    unknown = client.post(
        f"/w/{workspace.slug}/settings/guardrails/",
        {"action_class": "noSuchAction", "policy": "deny"},
    )
    assert unknown.status_code == 302
    assert "Unknown action class" in client.get(unknown.url).content.decode()
