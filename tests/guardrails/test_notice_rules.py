"""The rules of approval notices (guardrails/notices.py): what they say, how they are signed,
when a delivery is tried again, which webhook URLs are refused."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
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


@pytest.mark.parametrize(
    "host",
    [
        "[::127.0.0.1]",  # IPv4-compatible
        "[::ffff:127.0.0.1]",  # IPv4-mapped
        "[::ffff:a00:1]",  # 10.0.0.1, mapped, in hex
        "[64:ff9b::7f00:1]",  # NAT64 of 127.0.0.1
        "[64:ff9b::a9fe:a9fe]",  # NAT64 of the cloud metadata address
        "[64:ff9b:1::1]",  # local-use NAT64
        "[2002:7f00:1::]",  # 6to4 of 127.0.0.1
        "127.1",
        "0x7f000001",
        "2130706433",
        "0177.0.0.1",
        "0x7f.1",
        "10.1",
        "LOCALHOST.",
        "localhost.",
        "Api.LocalHost.",
        "0",
    ],
)
def test_private_addresses_in_every_form_a_resolver_reads_are_refused(host):
    problem = notices.webhook_url_problem(f"https://{host}/x", debug=False)
    assert "private network" in (problem or ""), host


@pytest.mark.parametrize("host", ["8.8.8.8", "134744072", "[64:ff9b::808:808]", "hooks.example"])
def test_public_addresses_pass_in_any_form(host):
    assert notices.webhook_url_problem(f"https://{host}/x", debug=False) is None


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="0123456789abcdefxX.", min_size=1, max_size=18))
def test_a_numeric_host_is_read_as_the_c_library_reads_it(text):
    """The rule and glibc's inet_aton (what getaddrinfo uses for numeric hosts) agree on
    every string of digits, hex letters, x and dots."""
    try:
        expected = ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        expected = None
    found = notices.numeric_host(text)
    if expected is not None:
        assert found == expected
    else:  # stricter only where a trailing dot is dropped (a name's root): never looser
        assert found is None or text.endswith(".")


@given(st.integers(0, 2**32 - 1))
def test_every_form_of_an_ipv4_address_is_the_same_address(value):
    ip = ipaddress.IPv4Address(value)
    a, b, c, d = ip.packed
    forms = [
        str(ip),
        str(value),
        hex(value),
        f"{a}.{b}.{c * 256 + d}",
        f"{a}.{(b << 16) | (c << 8) | d}",
    ]
    assert {notices.numeric_host(f) for f in forms} == {ip}
    assert notices.address_private(
        ipaddress.IPv6Address(f"::ffff:{ip}")
    ) == notices.address_private(ip)
    nat64 = ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | value)
    if notices.address_private(ip):
        assert notices.address_private(nat64)
