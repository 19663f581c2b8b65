"""The rules of approval notices (guardrails/notices.py): what they say, how they are signed,
when a delivery is tried again, which webhook URLs are refused."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrails import notices

SUMMARY = notices.Summary(
    request_id=7,
    workspace="Acme",
    action="Publish a review to GitHub",
    action_class="prPublish",
    target="acme/app#5",
    requester="bob@example.com",
    note="Before the release, please",
    expires_at=datetime(2026, 12, 2, 9, 30, tzinfo=UTC),
    link="https://quorum.example.com/w/acme/approvals/#approval-7",
)


def test_the_text_names_the_request_and_links_to_it():
    text = notices.text(SUMMARY)
    assert text.splitlines() == [
        "bob@example.com asks for approval in Acme: publish a review to GitHub — acme/app#5 "
        "(request #7).",
        "Their note: Before the release, please",
        "It expires at 2026-12-02 09:30 UTC.",
        "Open it in the approvals inbox: https://quorum.example.com/w/acme/approvals/#approval-7",
    ]
    body = notices.payload(SUMMARY)
    assert body["text"] == text and json.loads(json.dumps(body))["request"]["id"] == 7


@given(secret=st.text(min_size=16, max_size=64), body=st.binary(max_size=512))
def test_a_signature_verifies_with_its_secret_only(secret, body):
    stamp = "1764582000"
    header = notices.signature(secret, stamp, body)
    # What a receiver computes from the README's description.
    mac = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    assert header == f"sha256={mac}"
    assert notices.signature_valid(secret, stamp, body, header)
    assert not notices.signature_valid(secret + "x", stamp, body, header)
    assert not notices.signature_valid(secret, "1764582001", body, header)
    assert not notices.signature_valid(secret, stamp, body + b" ", header)


@given(st.integers(min_value=1, max_value=notices.MAX_ATTEMPTS), st.integers(0, 60))
def test_backoff_doubles(attempt, base):
    assert notices.backoff_seconds(attempt, base) == base * 2 ** (attempt - 1)
    if attempt > 1:
        assert notices.backoff_seconds(attempt, base) == 2 * notices.backoff_seconds(
            attempt - 1, base
        )


@given(st.integers(1, 10), st.one_of(st.none(), st.integers(100, 599)))
def test_a_delivery_stops_when_accepted_refused_or_out_of_attempts(attempt, code):
    again = notices.retry_after(attempt, code)
    if attempt >= notices.MAX_ATTEMPTS or (code is not None and 200 <= code < 300):
        assert not again
    elif code is None or code >= 500 or code in (408, 429) or code < 400:
        assert again
    else:
        assert not again


@pytest.mark.parametrize(
    ("url", "debug", "problem"),
    [
        ("https://hooks.slack.com/services/T/B/x", False, None),
        ("http://hooks.example.com/x", False, "only https"),
        ("http://127.0.0.1:8080/x", True, None),
        ("https://127.0.0.1/x", False, "private network"),
        ("https://192.168.1.4/x", False, "private network"),
        ("https://169.254.169.254/latest/meta-data", False, "private network"),
        ("https://[fd00::1]/x", False, "private network"),
        ("https://api.localhost/x", False, "private network"),
        ("https://a:b@hooks.example.com/x", True, "credentials"),
        ("ftp://hooks.example.com/x", True, "only http and https"),
    ],
)
def test_webhook_urls(url, debug, problem):
    found = notices.webhook_url_problem(url, debug=debug)
    assert (found is None) if problem is None else (problem in (found or ""))


def test_a_host_resolving_into_a_private_network_is_refused_outside_debug():
    assert notices.address_problem(["93.184.216.34"], debug=False) is None
    assert "private" in (notices.address_problem(["93.184.216.34", "10.0.0.2"], debug=False) or "")
    assert "resolve" in (notices.address_problem([], debug=False) or "")
    assert notices.address_problem(["127.0.0.1"], debug=True) is None
