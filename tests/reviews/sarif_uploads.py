"""Uploading a SARIF log as CI does: post it, let the worker record it, read the outcome."""

from __future__ import annotations

from typing import Any

from config.background import drain


def upload_and_wait(client: Any, url: str, log: dict) -> dict:
    """The upload's outcome once recorded. Needs the embedded background (REDIS_URL empty)
    and a test database the worker thread can see (django_db(transaction=True))."""
    response = client.post(url, log, content_type="application/json")
    assert response.status_code == 202, response.content
    accepted = response.json()
    assert accepted["state"] == "queued" and accepted["runs"] == [], accepted
    assert drain(60), "the SARIF upload was still being recorded after 60 s"
    status = client.get(accepted["status_url"])
    assert status.status_code == 200, status.content
    return status.json()
