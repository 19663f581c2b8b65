"""`manage.py check --deploy` passes for a server configured through the HTTPS switches."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from config import env

ROOT = Path(__file__).resolve().parents[2]

HTTPS_SWITCHES = {
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
}


def _manage(*args: str, **environ: str) -> subprocess.CompletedProcess:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
    full_stack = {
        "DATABASE_URL": os.environ.get("DATABASE_URL")
        or "postgres://postgres@127.0.0.1:5432/quorum",
        "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0",
        "SECRET_KEY": secrets.token_urlsafe(50),
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**keep, "DJANGO_SETTINGS_MODULE": "config.settings", **full_stack, **environ},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_passes_with_the_https_switches():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", **HTTPS_SWITCHES)
    assert result.returncode == 0, result.stderr + result.stdout


def test_check_deploy_names_what_a_server_without_them_lacks():
    result = _manage("check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode != 0
    for code in ("security.W004", "security.W008"):
        assert code in result.stderr
    # Everything else is already right in the full stack with DEBUG off.
    assert result.stderr.count("(security.") == 2, result.stderr


def test_a_bad_switch_stops_the_start():
    result = _manage("check", SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto=")
    assert result.returncode != 0
    assert "SECURE_PROXY_SSL_HEADER" in result.stderr
    result = _manage("check", SECURE_HSTS_SECONDS="a year")
    assert result.returncode != 0 and "SECURE_HSTS_SECONDS" in result.stderr


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", None),
        ("HTTP_X_FORWARDED_PROTO", ("HTTP_X_FORWARDED_PROTO", "https")),
        ("X-Forwarded-Proto", ("HTTP_X_FORWARDED_PROTO", "https")),
        ("X-Forwarded-Ssl=on", ("HTTP_X_FORWARDED_SSL", "on")),
    ],
)
def test_envproxyheader(monkeypatch, raw, expected):
    monkeypatch.setenv("PROXY", raw)
    assert env.envproxyheader("PROXY") == expected


@pytest.mark.parametrize("raw", ["X Forwarded", "HTTP_X_FORWARDED_PROTO=", "Ünïcode"])
def test_envproxyheader_refuses_what_is_not_a_header(monkeypatch, raw):
    monkeypatch.setenv("PROXY", raw)
    with pytest.raises(ImproperlyConfigured, match="PROXY"):
        env.envproxyheader("PROXY")


def test_the_switches_take_effect(settings, db):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    client = Client()  # a new client loads the middleware with these settings

    plain = client.get("/accounts/login/")
    assert plain.status_code == 301
    assert plain["Location"] == "https://testserver/accounts/login/"
    assert "Strict-Transport-Security" not in plain  # never over plain HTTP

    proxied = client.get("/accounts/login/", headers={"X-Forwarded-Proto": "https"})
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert proxied.cookies["csrftoken"]["secure"] == (settings.CSRF_COOKIE_SECURE or "")

    assert client.get("/healthz").status_code == 200  # health checks stay on plain HTTP


def test_every_page_carries_the_security_headers(client, db):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"].startswith("'self' 'nonce-")
    assert "'unsafe-inline'" not in directives["script-src"]
    assert "'unsafe-eval'" not in policy
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    nonce = directives["script-src"].split("'nonce-")[1].rstrip("'")
    html = response.content.decode()
    assert html.count("<script") == html.count(f'nonce="{nonce}"') > 0
