"""Email + password accounts through django-allauth."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.cache import cache

from tests.fixtures import PASSWORD


def test_it_signs_up_and_logs_in_with_an_email(db, client, settings):
    settings.QUORUM_OPEN_SIGNUP = settings.QUORUM_OPEN_WORKSPACES = True
    response = client.post(
        "/accounts/signup/",
        {
            "email": "erin@example.com",
            "password1": "a-long-pass-phrase",
            "password2": "a-long-pass-phrase",
        },
    )
    assert response.status_code == 302
    client.logout()
    response = client.post(
        "/accounts/login/", {"login": "erin@example.com", "password": "a-long-pass-phrase"}
    )
    assert response.status_code == 302
    assert client.get("/").status_code == 302  # to workspace creation: no workspace yet
    assert client.get("/new/").status_code == 200


def test_it_rate_limits_failed_logins(alice, client):
    cache.clear()
    refused = "Too many failed login attempts"
    for _ in range(5):
        response = client.post("/accounts/login/", {"login": alice.email, "password": "wrong"})
        assert refused not in response.content.decode()
    # Past the per-account limit (5 per 5 minutes) even the right password is refused.
    response = client.post("/accounts/login/", {"login": alice.email, "password": PASSWORD})
    assert response.status_code == 200
    assert refused in response.content.decode()
    assert "_auth_user_id" not in client.session
    cache.clear()


def test_github_login_is_absent_unless_configured(db, client):
    assert "allauth.socialaccount.providers.github" not in settings.INSTALLED_APPS
    html = client.get("/accounts/login/").content.decode()
    assert "GitHub" not in html


def test_creating_a_workspace_makes_the_creator_its_owner(alice, client_for, settings):
    settings.QUORUM_OPEN_WORKSPACES = True
    client = client_for(alice)
    response = client.post("/new/", {"name": "Rocket Science"})
    assert response.status_code == 302
    assert response["Location"] == "/w/rocket-science/settings/"
    assert alice.memberships.get().role == "owner"
    duplicate = client.post("/new/", {"name": "Rocket science"})
    assert "is taken" in duplicate.content.decode()


def test_sign_in_keeps_its_rate_limit_while_redis_is_down(alice, client, settings):
    """Redis not answering (nothing listens on the port): sign-in works and the failed-login
    limit still holds, on the process-local stand-in (config/cache.py)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "config.cache.FallbackRedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # discard port: refused at once
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    client.raise_request_exception = False
    signed_in = client.post("/accounts/login/", {"login": alice.email, "password": PASSWORD})
    assert signed_in.status_code == 302, signed_in.status_code
    client.logout()
    refused = "Too many failed login attempts"
    for _ in range(5):
        response = client.post("/accounts/login/", {"login": alice.email, "password": "wrong"})
        assert response.status_code == 200 and refused not in response.content.decode()
    response = client.post("/accounts/login/", {"login": alice.email, "password": PASSWORD})
    assert response.status_code == 200 and refused in response.content.decode()


def test_under_asgi_requests_share_the_stand_in_and_the_outage_is_logged_once(
    alice, settings, caplog
):
    """Under ASGI each request runs in a context of its own, as daphne starts it, and Django
    gives each context a cache object of its own: the stand-in and its outage state must still
    be the process's."""
    import contextvars

    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    settings.CACHES = {
        "default": {
            "BACKEND": "config.cache.FallbackRedisCache",
            "LOCATION": "redis://127.0.0.1:9/5",  # discard port, a location of this test only
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    client = AsyncClient()
    refused = "Too many failed login attempts"

    async def post(password: str) -> str:
        response = await client.post(
            "/accounts/login/", {"login": alice.email, "password": password}
        )
        return response.content.decode()

    def attempt(password: str) -> str:
        return contextvars.copy_context().run(async_to_sync(post), password)

    with caplog.at_level("WARNING", logger="config.cache"):
        for _ in range(5):
            assert refused not in attempt("wrong")
        assert refused in attempt(PASSWORD)
    outages = [r for r in caplog.records if "does not answer" in r.getMessage()]
    assert len(outages) == 1, [r.getMessage() for r in outages]


@pytest.mark.redis
def test_under_asgi_requests_reuse_one_redis_connection(alice, settings):
    """Every page load under ASGI used to open (and handshake) a Redis connection of its own."""
    import contextvars
    import uuid

    import redis
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    name = f"quorum-test-{uuid.uuid4().hex[:12]}"
    settings.CACHES = {
        "default": {
            "BACKEND": "config.cache.FallbackRedisCache",
            "LOCATION": settings.REDIS_URL,
            "OPTIONS": {"client_name": name},
            # The failed sign-ins below count against alice and this address for minutes: under
            # a prefix of their own they cannot refuse a later test's sign-in on this database.
            "KEY_PREFIX": name,
        }
    }
    client, observer = AsyncClient(), redis.Redis.from_url(settings.REDIS_URL)
    seen: set[int] = set()

    async def post() -> int:
        response = await client.post("/accounts/login/", {"login": alice.email, "password": "x"})
        return response.status_code

    for _ in range(6):
        assert contextvars.copy_context().run(async_to_sync(post)) == 200
        seen |= {c["id"] for c in observer.client_list() if c.get("name") == name}
    observer.close()
    assert len(seen) == 1, seen
