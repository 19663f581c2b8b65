"""Browser-test support: a live ASGI server (daphne, HTTP + websockets) and headless Chromium.

The server runs in a forked process that inherits the test database settings, so pages see
what the test committed; websockets work because it is the real ASGI application.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest
from channels.testing.live import make_application
from daphne.testing import DaphneProcess
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.db import connections

from tests.fixtures import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
_INHERITED_POOLS: list = []


def _forget_inherited_connections() -> None:
    # The child must not use (or close) the parent's database sockets or its channel layer
    # (whose Redis connections belong to the parent's event loops): it opens its own. Nor may
    # it keep asgiref's shared executor, whose thread did not survive the fork: consumers'
    # database calls would wait on it forever.
    from concurrent.futures import ThreadPoolExecutor

    from asgiref.sync import SyncToAsync
    from channels.layers import channel_layers

    for connection in connections.all(initialized_only=True):
        connection.connection = None
        # A connection pool's idle connections are the parent's sockets too (the parent
        # closes its pool before forking; this is for one opened meanwhile by another thread).
        pools = getattr(type(connection), "_connection_pools", None)
        if pools:
            _INHERITED_POOLS.extend(pools.values())  # kept, never closed: closing says goodbye
            pools.clear()  # to the server on the parent's sockets
    channel_layers.backends = {}
    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)


def live_server_start() -> DaphneProcess:
    """Fork the live server with the settings and data committed so far; the caller stops it."""
    connections.close_all()
    for connection in connections.all(initialized_only=True):
        if connection.alias in getattr(type(connection), "_connection_pools", {}):
            connection.close_pool()  # its idle sockets would be shared with the child
    process = DaphneProcess(
        "127.0.0.1",
        partial(make_application, static_wrapper=ASGIStaticFilesHandler),
        setup=_forget_inherited_connections,
    )
    process.start()
    if not process.ready.wait(timeout=30):
        process.terminate()
        raise RuntimeError("the live ASGI server did not start")
    return process


@pytest.fixture
def asgi_server(transactional_db, settings) -> Iterator[str]:
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "localhost", "127.0.0.1"]
    process = live_server_start()
    try:
        yield f"http://127.0.0.1:{process.port.value}"
    finally:
        process.terminate()
        process.join(timeout=10)


@contextmanager
def chromium_launched() -> Iterator:
    """Headless Debian Chromium under Playwright. Playwright drives its own event loop in this
    thread; the ORM calls the tests make between browser steps are ordinary synchronous calls."""
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def browser():
    with chromium_launched() as instance:
        yield instance


def login(browser, base_url: str, email: str, password: str = PASSWORD):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    return page


def axe_violations(page, impacts=("serious", "critical")) -> list[dict]:
    # From the server's static files: the CSP refuses inline scripts, which add_script_tag(path=)
    # would inject.
    origin = "/".join(page.url.split("/", 3)[:3])
    page.add_script_tag(url=f"{origin}/static/vendor/axe-core/axe.min.js")
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in impacts
    ]


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def card(node_id: int, state: str = "") -> str:
    """A finding's one card, wherever it is: in the diff (`diff-node-N`) or in the list
    (`node-N`); `state` a class it must have too (".node-dismissed")."""
    return f"#node-{node_id}{state}, #diff-node-{node_id}{state}"
