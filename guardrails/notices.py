"""Telling approvers a request waits: the rules, without I/O (guardrails/notify.py sends).

What a notice may say is fixed here: the request's summary (action, target, requester, the
requester's note, expiry) and the link to it in the inbox. Never a finding's code, a
payload's body or a secret: the payload is not an argument of anything here.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from config.safeurl import web_url_problem

#: A delivery is tried this many times in all, waiting base, 2×base, 4×base… between tries.
MAX_ATTEMPTS = 4
SIGNATURE_HEADER = "X-Quorum-Signature"
TIMESTAMP_HEADER = "X-Quorum-Timestamp"
EVENT_HEADER = "X-Quorum-Event"
MIN_SECRET_LENGTH = 16
MAX_SECRET_LENGTH = 200
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class Summary:
    """What an approver is told about a request."""

    request_id: int
    workspace: str
    action: str  # the action class's description, e.g. "Publish a review to GitHub"
    action_class: str
    target: str
    requester: str
    note: str
    expires_at: datetime
    link: str


def text(summary: Summary) -> str:
    """The message body: the same words in the email and in the webhook's `text`."""
    lines = [
        f"{summary.requester} asks for approval in {summary.workspace}: "
        f"{summary.action[:1].lower()}{summary.action[1:]} — {summary.target} "
        f"(request #{summary.request_id}).",
    ]
    if summary.note:
        lines.append(f"Their note: {summary.note}")
    lines.append(f"It expires at {summary.expires_at:%Y-%m-%d %H:%M} UTC.")
    lines.append(f"Open it in the approvals inbox: {summary.link}")
    return "\n".join(lines)


def subject(summary: Summary) -> str:
    return f"[Quorum] Approval needed: {summary.action} — {summary.target}"[:200]


def payload(summary: Summary) -> dict[str, object]:
    """The webhook's JSON: Slack-compatible `text`, and the same facts as fields."""
    return {
        "text": text(summary),
        "event": "approval.requested",
        "request": {
            "id": summary.request_id,
            "workspace": summary.workspace,
            "action_class": summary.action_class,
            "action": summary.action,
            "target": summary.target,
            "requester": summary.requester,
            "note": summary.note,
            "expires_at": summary.expires_at.isoformat(),
            "url": summary.link,
        },
    }


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`sha256=` + HMAC-SHA256 of `<timestamp>.<body>` keyed with the workspace's secret.
    The timestamp is signed with the body so a captured delivery cannot be replayed later."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def signature_valid(secret: str, timestamp: str, body: bytes, header: str) -> bool:
    return hmac.compare_digest(signature(secret, timestamp, body), header)


def backoff_seconds(attempt: int, base: int) -> int:
    """How long to wait after failed attempt ATTEMPT (1-based) before the next one."""
    return base * 2 ** (attempt - 1)


def accepted(status_code: int | None) -> bool:
    return status_code is not None and 200 <= status_code < 300


def retry_after(attempt: int, status_code: int | None) -> bool:
    """Whether a failed attempt is tried again: not after the last one, and not when the
    receiver says the request itself is wrong (4xx other than 408 and 429)."""
    if attempt >= MAX_ATTEMPTS or accepted(status_code):
        return False
    refused = status_code is not None and 400 <= status_code < 500
    return not refused or status_code in (408, 429)


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries, the way the network would reach it: mapped
    (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d), 6to4, Teredo."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    value = int(ip)
    if ip in _NAT64 or (value >> 32 == 0 and value > 1):
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def address_private(ip: IPAddress) -> bool:
    """Not an address on the public internet: loopback, private, link-local, reserved,
    multicast, or an IPv6 form of such an IPv4 address."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _NAT64_LOCAL:
            return True
        embedded = _embedded_ipv4(ip)
        if embedded is not None and address_private(embedded):
            return True
    return not ip.is_global or ip.is_multicast


def _inet_aton_part(text: str) -> int | None:
    try:
        if text[:2].lower() == "0x":
            return int(text[2:], 16) if text[2:] else None
        if len(text) > 1 and text.startswith("0"):
            return int(text[1:], 8)
        return int(text, 10) if text.isascii() and text.isdigit() else None
    except ValueError:
        return None


def numeric_host(host: str) -> IPAddress | None:
    """The address a resolver reads in a host that is a number, or None for a name. Besides
    the usual forms, the C library's inet_aton reads 127.1, 0x7f000001, 2130706433 and
    0177.0.0.1 as 127.0.0.1: so does this."""
    host = host.strip().rstrip(".").lower()
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_inet_aton_part(p) for p in parts]
    if any(v is None or v < 0 for v in values):
        return None
    numbers = [v for v in values if v is not None]
    *head, last = numbers
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = 0
    for v in head:
        value = value << 8 | v
    value = value << (8 * (5 - len(numbers))) | last
    return ipaddress.IPv4Address(value)


def host_problem(host: str) -> str | None:
    """Why a URL's host is not a public one as a resolver would read it, or None for a name
    that must be resolved to tell."""
    name = host.strip().rstrip(".").lower()
    if name in LOOPBACK_NAMES or name == "localhost" or name.endswith(".localhost"):
        return "the URL points into a private network; use a public https address"
    address = numeric_host(name)
    if address is not None and address_private(address):
        return "the URL points into a private network; use a public https address"
    return None


def webhook_url_problem(url: str, *, debug: bool) -> str | None:
    """Why URL cannot be a workspace's webhook, or None. HTTPS to a public host; with DEBUG on
    (development, tests) plain HTTP and loopback or private addresses are allowed too. A host
    name is resolved when it is saved and again at each delivery (`address_problem`)."""
    problem = web_url_problem(url)
    if problem:
        return problem
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.username or parts.password:
        return "the URL carries credentials; the signing secret is what authenticates Quorum"
    if debug:
        return None
    if parts.scheme.lower() != "https":
        return "only https URLs are accepted"
    return host_problem(host)


def address_problem(addresses: list[str], *, debug: bool) -> str | None:
    """Refuse a host name that resolves into a private network (outside DEBUG)."""
    if debug:
        return None
    if not addresses:
        return "the host name does not resolve"
    for address in addresses:
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return "the host name resolves to something that is not an address"
        if address_private(ip):
            return "the host name resolves into a private network"
    return None


def secret_problem(secret: str) -> str | None:
    if not MIN_SECRET_LENGTH <= len(secret) <= MAX_SECRET_LENGTH:
        return f"the signing secret must be {MIN_SECRET_LENGTH} to {MAX_SECRET_LENGTH} characters"
    if any(ch.isspace() or ord(ch) < 0x20 for ch in secret):
        return "the signing secret cannot contain spaces or control characters"
    return None
