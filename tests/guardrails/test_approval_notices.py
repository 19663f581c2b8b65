"""Approvers are told, not hunted: a real SMTP server receives one email per approver, a real
HTTP receiver checks the webhook's signature, and a flaky receiver gets one accepted delivery."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from email import message_from_string
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller
from django.urls import reverse

from guardrails import notices, notify
from guardrails.models import (
    ApprovalNotice,
    ApprovalRequest,
    ApprovalWebhook,
    AuditEvent,
    WebhookDelivery,
)
from guardrails.notify import approval_webhook_set, webhook_deliver
from guardrails.presence import presence_touch
from guardrails.tasks import approval_emails_task, approval_webhook_task
from reviews.services.publishing import publish_request
from workspaces.rules import RuleError

SECRET = "whsec-" + "k" * 26
PUBLIC = "https://quorum.example.com"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Mailbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], str]] = []

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler hook
        self.messages.append((list(envelope.rcpt_tos), envelope.content.decode()))
        return "250 OK"


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server on loopback, and Django's SMTP backend pointed at it."""
    mailbox = _Mailbox()
    port = _free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_USE_TLS, settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD = False, "", ""
    yield mailbox
    controller.stop()


class _Receiver:
    """An HTTP endpoint answering POSTs with the given statuses in turn (the last one after)."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                n = len(receiver.received) - 1
                status = receiver.statuses[min(n, len(receiver.statuses) - 1)]
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/quorum"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver_factory():
    made: list[_Receiver] = []

    def make(statuses: list[int]) -> _Receiver:
        made.append(_Receiver(statuses))
        return made[-1]

    yield make
    for r in made:
        r.close()


def _wait_for(predicate, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def _verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does, as README "Approval notices" tells it (not Quorum's own code)."""
    stamp = headers["x-quorum-timestamp"]
    expected = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"sha256={expected}", headers["x-quorum-signature"])


@pytest.fixture
def told(publishable, settings, member_factory):
    """The publishable PR, in the embedded mode (background threads): an approver connected,
    a second approver and an admin who are not, a viewer who may not decide."""
    space, review_round, bob, vera = publishable
    settings.REDIS_URL = ""  # background work runs in server threads, after commit
    settings.QUORUM_PUBLIC_URL = PUBLIC
    settings.QUORUM_WEBHOOK_BACKOFF_SECONDS = 0
    ws = space.workspace
    member_factory(ws, "approver", "ada@example.com")
    member_factory(ws, "viewer", "vic@example.com")
    presence_touch(channel_name="vera-socket", workspace_id=ws.pk, user_id=vera.pk)
    return space, bob, vera


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_publish_request_emails_each_approver_once_and_never_the_requester(
    told, smtp_server, client_for
):
    space, bob, _ = told
    result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert result.outcome == "pending"
    request = result.request
    _wait_for(lambda: len(smtp_server.messages) >= 3)
    time.sleep(0.3)  # nothing more arrives
    recipients = sorted(r for rcpt, _ in smtp_server.messages for r in rcpt)
    # The owner, both approvers; not the requester, not the viewer.
    assert recipients == ["ada@example.com", "alice@example.com", "vera@example.com"]
    link = f"{PUBLIC}/w/{space.workspace.slug}/approvals/#approval-{request.pk}"
    for _, raw in smtp_server.messages:
        mail = message_from_string(raw)
        body = mail.get_payload(decode=True).decode()
        assert mail["Subject"].startswith("[Quorum] Approval needed: Publish a review to GitHub")
        assert link in body and "bob@example.com" in body and "acme/app#5" in body
        # The request's summary only: no finding's title, reasoning, fix or code.
        for secret_text in (
            "SQL built from user input",
            "string formatting",
            "parameters",
            "3 / 0",
        ):
            assert secret_text not in raw
    # The requester sees who was told, in the inbox and in the API.
    page = client_for(bob).get(f"/w/{space.workspace.slug}/approvals/").content.decode()
    told_line = page.split(f'id="approval-{request.pk}-told"')[1].split("</p>")[0]
    assert "ada@example.com by email" in told_line and "vera@example.com by email" in told_line
    assert "bob@example.com" not in told_line
    review = client_for(bob).get(reverse("reviews:detail", args=[space.workspace.slug, space.pk]))
    review_told = review.content.decode().split('id="publication-told"')[1].split("</span>")[0]
    assert "alice@example.com by email" in review_told
    api = client_for(bob).get(f"/api/v1/workspaces/{space.workspace.slug}/approvals")
    notified = api.json()[0]["notified"]
    assert sorted(n["recipient"] for n in notified) == recipients
    assert {n["channel"] for n in notified} == {"email"}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_receiver_failing_twice_gets_exactly_one_accepted_delivery_after_three_attempts(
    told, receiver_factory, client_for, settings, alice
):
    space, bob, _ = told
    settings.DEBUG = True  # a loopback receiver is allowed in development and tests only
    receiver = receiver_factory([500, 503, 204])
    slug = space.workspace.slug
    admin = client_for(alice)
    saved = admin.post(
        f"/w/{slug}/settings/guardrails/webhook/", {"url": receiver.url, "secret": SECRET}
    )
    assert saved.status_code == 302
    result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    request = result.request
    _wait_for(lambda: WebhookDelivery.objects.filter(accepted=True).exists())
    time.sleep(0.3)
    assert len(receiver.received) == 3
    for headers, body in receiver.received:
        assert _verify(SECRET, headers, body)
        assert not _verify("another-secret-of-some-length", headers, body)
        message = json.loads(body)
        assert message["event"] == "approval.requested"
        assert f"#approval-{request.pk}" in message["text"] and "bob@example.com" in message["text"]
        assert "SQL built from user input" not in body.decode()
    log = list(WebhookDelivery.objects.order_by("attempt").values_list("attempt", "status_code"))
    assert log == [(1, 500), (2, 503), (3, 204)]
    assert WebhookDelivery.objects.filter(accepted=True).count() == 1
    # A redelivered task does not post again.
    approval_webhook_task.run(request.pk, PUBLIC, 3)
    assert len(receiver.received) == 3
    # The admin's delivery log, and the requester's line in the inbox.
    page = admin.get(f"/w/{slug}/settings/guardrails/").content.decode()
    table = page.split('id="webhook-deliveries"')[1].split("</table>")[0]
    assert table.count("<tr>") == 4 and "503" in table and "accepted" in table
    assert SECRET not in page and "/hooks/quorum" not in page
    inbox = client_for(bob).get(f"/w/{slug}/approvals/").content.decode()
    assert "127.0.0.1 by webhook" in inbox


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_receiver_that_never_accepts_is_tried_a_few_times_then_left(
    told, receiver_factory, settings, workspace, alice
):
    space, bob, _ = told
    settings.DEBUG = True
    receiver = receiver_factory([502])
    ApprovalWebhook.objects.create(
        workspace=workspace, url=receiver.url, secret=SECRET, updated_at="2026-01-01T00:00Z"
    )
    publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    _wait_for(lambda: WebhookDelivery.objects.count() >= notices.MAX_ATTEMPTS)
    time.sleep(0.3)
    assert len(receiver.received) == notices.MAX_ATTEMPTS
    assert not WebhookDelivery.objects.filter(accepted=True).exists()
    assert not ApprovalNotice.objects.filter(channel="webhook").exists()


# -- the settings ----------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("role", ["approver", "reviewer", "viewer"])
def test_only_admins_set_the_webhook_and_see_its_log(workspace, member_factory, client_for, role):
    member = client_for(member_factory(workspace, role))
    url = f"/w/{workspace.slug}/settings/guardrails/webhook/"
    for body in ({"url": "https://hooks.example.com/x", "secret": SECRET}, {"remove": "1"}):
        assert member.post(url, body).status_code == 403
    assert not ApprovalWebhook.objects.exists()
    denied = AuditEvent.objects.filter(action="permission.denied")
    assert {e.payload["attempted"] for e in denied} == {"change the approval webhook"}
    page = member.get(f"/w/{workspace.slug}/settings/guardrails/").content.decode()
    assert "Approval notices" not in page and "webhook-deliveries" not in page


@pytest.mark.postgres
@pytest.mark.django_db
def test_an_admin_sets_the_webhook(workspace, member_factory, client_for):
    admin = client_for(member_factory(workspace, "admin"))
    response = admin.post(
        f"/w/{workspace.slug}/settings/guardrails/webhook/",
        {"url": "https://hooks.example.com/q", "secret": SECRET},
    )
    assert response.status_code == 302
    assert ApprovalWebhook.objects.get().url == "https://hooks.example.com/q"
    page = admin.get(response["Location"]).content.decode()
    assert "Webhook saved. The secret is not shown again." in page
    assert 'id="webhook-deliveries"' in page and "Nothing delivered yet." in page


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "secret", "error"),
    [
        ("http://hooks.example.com/x", SECRET, "only https URLs are accepted"),
        ("https://10.1.2.3/x", SECRET, "private network"),
        ("https://localhost:8443/x", SECRET, "private network"),
        ("https://[::1]/x", SECRET, "private network"),
        ("https://user:pw@hooks.example.com/x", SECRET, "carries credentials"),
        ("javascript:alert(1)", SECRET, "only http and https URLs"),
        ("https://hooks.example.com/x", "short", "16 to 200 characters"),
        ("https://hooks.example.com/x", "", "Set a signing secret"),
    ],
)
def test_a_webhook_the_server_would_not_call_is_refused_with_the_reason(
    workspace, alice, client_for, settings, url, secret, error
):
    settings.DEBUG = False
    admin = client_for(alice)
    response = admin.post(
        f"/w/{workspace.slug}/settings/guardrails/webhook/", {"url": url, "secret": secret}
    )
    page = admin.get(response["Location"]).content.decode()
    assert error in page
    assert not ApprovalWebhook.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_secret_is_write_only_and_a_blank_one_keeps_it(workspace, alice, client_for):
    admin = client_for(alice)
    url = f"/w/{workspace.slug}/settings/guardrails/webhook/"
    admin.post(url, {"url": "https://hooks.example.com/services/T1/B2/tok3n", "secret": SECRET})
    admin.post(url, {"url": "https://hooks.example.com/services/T1/B2/other", "secret": ""})
    hook = ApprovalWebhook.objects.get()
    assert hook.secret == SECRET and hook.url.endswith("/other")
    # Only the secret changes: the URL field left blank keeps the URL.
    admin.post(url, {"url": "", "secret": SECRET + "2"})
    hook.refresh_from_db()
    assert hook.secret == SECRET + "2" and hook.url.endswith("/other")
    page = admin.get(f"/w/{workspace.slug}/settings/guardrails/").content.decode()
    assert SECRET not in page and "/services/" not in page
    assert "https://hooks.example.com/…" in page
    events = AuditEvent.objects.filter(action="guardrails.webhook_set").order_by("seq")
    assert [e.payload for e in events] == [
        {"host": "hooks.example.com", "secret_changed": True},
        {"host": "hooks.example.com", "secret_changed": False},
        {"host": "hooks.example.com", "secret_changed": True},
    ]
    admin.post(url, {"remove": "1"})
    assert not ApprovalWebhook.objects.exists()
    assert AuditEvent.objects.filter(action="guardrails.webhook_removed").count() == 1


class _FlakyMailbox(_Mailbox):
    """A mail server that refuses its first message with a temporary error (451)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0

    async def handle_DATA(self, server, session, envelope):
        if not self.refused:
            self.refused += 1
            return "451 Requested action aborted: try again later"
        return await super().handle_DATA(server, session, envelope)


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_mail_server_error_is_retried_and_nobody_is_emailed_twice(
    publishable, settings, member_factory
):
    space, _, bob, vera = publishable
    member_factory(space.workspace, "approver", "ada@example.com")
    presence_touch(channel_name="vera-socket", workspace_id=space.workspace_id, user_id=vera.pk)
    mailbox = _FlakyMailbox()
    port = _free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
        result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
        # The task as a worker runs it, its retries included (eagerly: no wait between them).
        approval_emails_task.apply(args=(result.request.pk, PUBLIC))
    finally:
        controller.stop()
    assert mailbox.refused == 1
    recipients = sorted(r for rcpt, _ in mailbox.messages for r in rcpt)
    assert recipients == ["ada@example.com", "alice@example.com", "vera@example.com"]
    assert ApprovalNotice.objects.filter(request=result.request).count() == 3


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_in_the_full_stack_celery_workers_email_and_retry_the_webhook_with_backoff(
    publishable, member_factory, smtp_server, receiver_factory, worker_factory, settings
):
    """A publish request in the web process; a real Celery worker sends the emails to the real
    SMTP server and delivers the webhook, retrying a failed delivery after its backoff."""
    space, _, bob, vera = publishable
    member_factory(space.workspace, "approver", "ada@example.com")
    presence_touch(channel_name="vera-socket", workspace_id=space.workspace_id, user_id=vera.pk)
    receiver = receiver_factory([500, 200])
    ApprovalWebhook.objects.create(
        workspace=space.workspace, url=receiver.url, secret=SECRET, updated_at="2026-01-01T00:00Z"
    )
    worker_factory(
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(settings.EMAIL_PORT),
        DEBUG="1",
        QUORUM_PUBLIC_URL=PUBLIC,
        QUORUM_WEBHOOK_BACKOFF_SECONDS="1",
    )
    result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    _wait_for(lambda: WebhookDelivery.objects.filter(accepted=True).exists(), timeout=60)
    _wait_for(lambda: len(smtp_server.messages) >= 3, timeout=30)
    recipients = sorted(r for rcpt, _ in smtp_server.messages for r in rcpt)
    assert recipients == ["ada@example.com", "alice@example.com", "vera@example.com"]
    first, second = WebhookDelivery.objects.order_by("attempt")
    assert (first.status_code, second.status_code) == (500, 200)
    # The second attempt waited for its backoff (a countdown on the queue, not a sleep).
    assert (second.attempted_at - first.attempted_at).total_seconds() >= 1
    assert all(_verify(SECRET, h, b) for h, b in receiver.received)
    assert f"#approval-{result.request.pk}" in json.loads(receiver.received[0][1])["text"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_with_nobody_connected_a_request_waits_for_approvers_who_are_told(
    publishable, settings, smtp_server
):
    """Told, not hunted: no approver has the inbox open, but mail leaves the server, so the
    request waits and the approvers are emailed; with mail that reaches nobody (the console
    backend) and no webhook, it is refused as before."""
    space, _, bob, _ = publishable
    settings.REDIS_URL = ""
    settings.QUORUM_PUBLIC_URL = PUBLIC
    result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert result.outcome == "pending", result.reason
    _wait_for(lambda: len(smtp_server.messages) >= 2)
    recipients = sorted(r for rcpt, _ in smtp_server.messages for r in rcpt)
    assert "vera@example.com" in recipients and "bob@example.com" not in recipients
    assert ApprovalRequest.objects.get().pk == result.request.pk


@pytest.mark.django_db
def test_mail_that_reaches_nobody_does_not_count_as_telling(publishable, settings):
    """The embedded default prints mail to the console: with no webhook either, nobody would
    be told, so a request with nobody connected is refused as before."""
    space, _, bob, _ = publishable
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    refused = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    assert refused.outcome == "refused" and "No approver is connected" in refused.reason
    assert not ApprovalRequest.objects.exists()


@pytest.mark.django_db
def test_a_delivery_connects_to_the_address_it_checked_keeping_the_hosts_name(
    publishable, receiver_factory, settings
):
    """Resolved once, checked, and connected to that address: the URL's name travels only in
    the Host header (and the TLS server name), so a second look-up cannot send it elsewhere."""
    space, _, bob, vera = publishable
    settings.DEBUG = True  # a loopback receiver is allowed in development and tests only
    settings.REDIS_URL = ""
    receiver = receiver_factory([204])
    url = receiver.url.replace("127.0.0.1", "localhost")
    ApprovalWebhook.objects.create(
        workspace=space.workspace, url=url, secret=SECRET, updated_at="2026-01-01T00:00Z"
    )
    presence_touch(channel_name="vera-socket", workspace_id=space.workspace_id, user_id=vera.pk)
    result = publish_request(space=space, selection="all_open", approve_on_ship=True, actor=bob)
    webhook_deliver(request_id=result.request.pk, origin=PUBLIC, attempt=1)
    [(headers, _)] = receiver.received
    assert headers["host"] == f"localhost:{receiver.server.server_address[1]}"
    assert WebhookDelivery.objects.get().accepted


@pytest.mark.django_db
def test_a_name_resolving_into_a_private_network_is_refused_at_save(workspace, alice, settings):
    settings.DEBUG = False
    with pytest.raises(RuleError, match="private network"):
        approval_webhook_set(
            workspace=workspace, url="https://localhost./x", secret=SECRET, actor=alice
        )
    # A name, not a literal: only resolving it tells (this machine's own name resolves to
    # one of its private or loopback addresses).
    name = socket.gethostname()
    if not notify._resolved(name):
        pytest.skip("this machine's name does not resolve here")
    with pytest.raises(RuleError, match="private network"):
        approval_webhook_set(
            workspace=workspace, url=f"https://{name}/x", secret=SECRET, actor=alice
        )
