"""Telling approvers a request waits: email to each approver, and the workspace's webhook.

Both run in background tasks queued after the request commits (guardrails/tasks.py), never in
the request that asked. What they say is decided in guardrails/notices.py. Each recipient is
told at most once per request (an `ApprovalNotice` row each), whatever the retries.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from config.background import QueueUnavailable, submit_now
from guardrails import notices, rules
from guardrails.actions import action_class
from guardrails.audit import Actor, Target, audit_record
from guardrails.events import approvals_emit
from guardrails.models import (
    ApprovalNotice,
    ApprovalRequest,
    ApprovalWebhook,
    AuditEvent,
    WebhookDelivery,
)
from guardrails.notices import numeric_host
from workspaces.models import Membership, Workspace
from workspaces.rules import Perm, RuleError, role_allows

log = logging.getLogger(__name__)

DEFAULT_ORIGIN = "http://localhost:8000"
WEBHOOK_TIMEOUT = 10.0


def origin_of(http_request: Any) -> str:
    """Where links in notices point: QUORUM_PUBLIC_URL, else the site the requester used."""
    if settings.QUORUM_PUBLIC_URL:
        return settings.QUORUM_PUBLIC_URL
    build = getattr(http_request, "build_absolute_uri", None)
    if build is not None:
        try:
            return str(build("/")).rstrip("/")
        except Exception:  # a disallowed Host header: fall back rather than fail the request
            log.warning("could not derive the site's address from the request")
    return DEFAULT_ORIGIN


def approvers_to_tell(request: ApprovalRequest) -> list[str]:
    """The addresses of the members who may decide this request, requester excepted."""
    perm = Perm(action_class(request.action_class).decide_perm)
    rows = (
        Membership.objects.filter(workspace_id=request.workspace_id, user__is_active=True)
        .exclude(user_id=request.requester_id)
        .exclude(user__email="")
        .values_list("role", "user__email")
        .order_by("user__email")
    )
    return [email for role, email in rows if role_allows(role, perm)]


#: Mail backends that reach nobody: printed to the console (the embedded default) or kept in
#: memory. With one of these and no webhook, nobody can be told of a request.
_UNDELIVERED_MAIL = (
    "django.core.mail.backends.console.EmailBackend",
    "django.core.mail.backends.locmem.EmailBackend",
    "django.core.mail.backends.dummy.EmailBackend",
    "django.core.mail.backends.filebased.EmailBackend",
)


def approvers_reachable(*, workspace_id: int, action: str, exclude_user_id: int | None) -> bool:
    """Whether someone who may decide `action` can be told of a request now, the requester
    excepted: by the workspace's webhook, or by mail that leaves the server."""
    if ApprovalWebhook.objects.filter(workspace_id=workspace_id).exists():
        return True
    if settings.EMAIL_BACKEND in _UNDELIVERED_MAIL:
        return False
    perm = Perm(action_class(action).decide_perm)
    rows = Membership.objects.filter(workspace_id=workspace_id, user__is_active=True).exclude(
        user__email=""
    )
    if exclude_user_id is not None:
        rows = rows.exclude(user_id=exclude_user_id)
    return any(role_allows(role, perm) for role in rows.values_list("role", flat=True))


def _note(request: ApprovalRequest) -> str:
    payload = (
        AuditEvent.objects.filter(
            workspace_id=request.workspace_id,
            action="approval.requested",
            payload__request=request.pk,
        )
        .values_list("payload", flat=True)
        .first()
    )
    note = payload.get("note") if isinstance(payload, dict) else None
    return str(note) if note else ""


def summary_of(request: ApprovalRequest, origin: str) -> notices.Summary:
    path = reverse("guardrails:approvals", args=[request.workspace.slug])
    return notices.Summary(
        request_id=request.pk,
        workspace=request.workspace.name,
        action=action_class(request.action_class).description,
        action_class=request.action_class,
        target=request.target_label,
        requester=request.requester_label,
        note=_note(request),
        expires_at=request.expires_at,
        link=f"{origin.rstrip('/')}{path}#approval-{request.pk}",
    )


def _waiting(request_id: int) -> ApprovalRequest | None:
    request = (
        ApprovalRequest.objects.select_related("workspace", "requester")
        .filter(pk=request_id)
        .first()
    )
    if request is None or request.status != rules.Status.PENDING:
        return None  # decided, withdrawn or gone before we got to it: nobody needs telling
    return request


def _notice_record(request: ApprovalRequest, channel: str, recipient: str) -> None:
    try:
        with transaction.atomic():
            ApprovalNotice.objects.create(
                request=request, channel=channel, recipient=recipient, sent_at=timezone.now()
            )
    except IntegrityError:
        pass  # a redelivered task told them already


def approval_emails_send(*, request_id: int, origin: str) -> int:
    """Email each approver not yet told; returns how many were sent now. A mail server error
    propagates (the task retries it) after the ones already sent are recorded."""
    request = _waiting(request_id)
    if request is None:
        return 0
    told = set(
        ApprovalNotice.objects.filter(
            request=request, channel=ApprovalNotice.Channel.EMAIL
        ).values_list("recipient", flat=True)
    )
    recipients = [r for r in approvers_to_tell(request) if r not in told]
    if not recipients:
        return 0
    summary = summary_of(request, origin)
    sent = 0
    with get_connection() as connection:
        for address in recipients:
            EmailMessage(
                subject=notices.subject(summary),
                body=notices.text(summary),
                to=[address],
                connection=connection,
            ).send()
            _notice_record(request, ApprovalNotice.Channel.EMAIL, address)
            sent += 1
    _told(request)
    return sent


def _told(request: ApprovalRequest) -> None:
    """The inbox and the review's page say who was told: refresh them."""
    approvals_emit(request, "notified")


def _resolved(host: str) -> list[str]:
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})
    except OSError:
        return []


def _pinned(url: str, address: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The request for `url` sent to the checked `address`, not to whatever a second look-up
    would answer: the URL names the address, the Host header and the TLS server name (which
    the certificate is verified against) keep the host's name."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    literal = f"[{ip}]" if ip.version == 6 else str(ip)
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    pinned = urlunsplit(parts._replace(netloc=netloc))
    shown_host = f"[{host}]" if ":" in host else host
    headers = {"Host": f"{shown_host}:{parts.port}" if parts.port else shown_host}
    extensions: dict[str, Any] = {}
    if parts.scheme.lower() == "https" and numeric_host(host) is None:
        extensions["sni_hostname"] = host
    return pinned, headers, extensions


def webhook_deliver(*, request_id: int, origin: str, attempt: int) -> bool:
    """One attempt to deliver the notice of REQUEST_ID to its workspace's webhook, logged as a
    WebhookDelivery. Returns whether another attempt should follow."""
    request = _waiting(request_id)
    if request is None:
        return False
    hook = ApprovalWebhook.objects.filter(workspace_id=request.workspace_id).first()
    if hook is None:
        return False
    deliveries = WebhookDelivery.objects.filter(webhook=hook, request=request)
    if deliveries.filter(accepted=True).exists():
        return False
    earlier = deliveries.filter(attempt=attempt).first()
    if earlier is not None:  # a redelivered task: this attempt happened, go on from it
        return notices.retry_after(attempt, earlier.status_code)
    host = urlsplit(hook.url).hostname or ""
    status_code: int | None = None
    # Checked as the resolver reads it, resolved once, and connected to the address checked.
    addresses = _resolved(host)
    error = notices.host_problem(host) if not settings.DEBUG else None
    error = error or notices.address_problem(addresses, debug=settings.DEBUG)
    if error is None and not addresses:
        error = "the host name does not resolve"
    if error is None:
        body = json.dumps(notices.payload(summary_of(request, origin))).encode()
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Quorum-Webhook",
            notices.EVENT_HEADER: "approval.requested",
            notices.TIMESTAMP_HEADER: stamp,
            notices.SIGNATURE_HEADER: notices.signature(hook.secret, stamp, body),
        }
        pinned, host_headers, extensions = _pinned(hook.url, addresses[0])
        try:
            with httpx.Client(timeout=WEBHOOK_TIMEOUT, follow_redirects=False) as client:
                response = client.post(
                    pinned,
                    content=body,
                    headers={**headers, **host_headers},
                    extensions=extensions,
                )
            status_code = response.status_code
            if not notices.accepted(status_code):
                error = f"the receiver answered {status_code}"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
    ok = notices.accepted(status_code)
    try:
        with transaction.atomic():
            WebhookDelivery.objects.create(
                webhook=hook,
                request=request,
                attempt=attempt,
                status_code=status_code,
                error=(error or "")[:500],
                accepted=ok,
                attempted_at=timezone.now(),
            )
    except IntegrityError:
        return False  # a concurrent copy of this task logged the same attempt
    if ok:
        _notice_record(request, ApprovalNotice.Channel.WEBHOOK, host)
        _told(request)
        return False
    log.warning("webhook attempt %s for request %s failed: %s", attempt, request_id, error)
    return notices.retry_after(attempt, status_code)


def approval_notices_queue(request_id: int, origin: str) -> None:
    """Called once a request needing approval commits: queue the email and webhook tasks."""
    try:
        submit_now("guardrails.approval_emails", request_id, origin)
        if ApprovalWebhook.objects.filter(workspace__approval_requests=request_id).exists():
            submit_now("guardrails.approval_webhook", request_id, origin, 1)
    except QueueUnavailable as exc:
        # The request stands and the inbox shows it; only the telling is lost.
        log.warning("approvers of request %s were not told: %s", request_id, exc)


# -- settings --------------------------------------------------------------------------------


def approval_webhook_set(
    *, workspace: Workspace, url: str, secret: str, actor: Any, http_request: Any = None
) -> ApprovalWebhook:
    """Set the workspace's webhook. A blank URL or secret keeps the current one (neither is
    shown back whole: a chat service's webhook path is a credential too)."""
    current = ApprovalWebhook.objects.filter(workspace=workspace).first()
    url = url.strip() or (current.url if current else "")
    problem = notices.webhook_url_problem(url, debug=settings.DEBUG)
    addresses = _resolved(urlsplit(url).hostname or "") if not problem else []
    if not problem and addresses:
        # Resolved now as well: a name that points into a private network is refused at once
        # (one that does not resolve yet is checked at each delivery).
        problem = notices.address_problem(addresses, debug=settings.DEBUG)
    if problem:
        raise RuleError(f"The webhook URL cannot be used: {problem}. Nothing was saved.")
    if not secret and current is None:
        raise RuleError("Set a signing secret: receivers check each delivery with it.")
    if secret:
        problem = notices.secret_problem(secret)
        if problem:
            raise RuleError(f"The secret cannot be used: {problem}. Nothing was saved.")
    with transaction.atomic():
        hook, _ = ApprovalWebhook.objects.update_or_create(
            workspace=workspace,
            defaults={
                "url": url,
                "secret": secret or (current.secret if current else ""),
                "updated_at": timezone.now(),
            },
        )
        audit_record(
            action="guardrails.webhook_set",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target("approvalwebhook", str(hook.pk), urlsplit(url).hostname or ""),
            # The host only: a chat service's webhook path is itself a credential.
            payload={"host": urlsplit(url).hostname or "", "secret_changed": bool(secret)},
            request=http_request,
        )
    return hook


def approval_webhook_remove(*, workspace: Workspace, actor: Any, http_request: Any = None) -> bool:
    with transaction.atomic():
        hook = ApprovalWebhook.objects.filter(workspace=workspace).first()
        if hook is None:
            return False
        host = urlsplit(hook.url).hostname or ""
        audit_record(
            action="guardrails.webhook_removed",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target("approvalwebhook", str(hook.pk), host),
            payload={"host": host},
            request=http_request,
        )
        hook.delete()
    return True


def webhook_display(url: str) -> str:
    """The URL as the settings page shows it: scheme and host, the path elided (a chat
    service's webhook path is a credential)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/…" if parts.path.strip("/") else url
