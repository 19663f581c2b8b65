"""Comments and tickets reviewers leave are visible (issue 12, point 6).

A scripted model reviewer on the sample shop pull request (faithful fake GitHub) leaves a
comment and proposes a ticket: both show on the review page (live, too), in the markdown report
and in the JSON. A reviewer+ dismisses a ticket (audited) or turns it into a GitHub issue through
the guardrails checkpoint (`issueCreate`, approved by someone else, filed once); a viewer can do
neither; a local-repository review offers no issue at all.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import reverse

from config import background
from config.asgi import application
from guardrails.models import ActionPolicy, ApprovalRequest, AuditEvent, Execution
from guardrails.presence import presence_touch
from guardrails.services.approvals import approval_decide
from guardrails.services.execution import approval_execute
from reviews.models import ReviewerStream, ReviewerTicket, ReviewRound
from reviews.pipeline.runner import run_inline
from reviews.services.notes import note_record
from reviews.services.requests import review_request
from reviews.sources.sample_repo import BASE_FILES, FEATURE_FILES, create_sample_repository
from tests.fakes.model_server import Script, calls, sample_finding, text
from tests.fixtures import use_fake_github
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://127.0.0.1:8000")

COMMENT = "Is the export path meant to be configurable? It is hard-coded here."
TICKET_TITLE = "Move product search to the ORM"
TICKET_BODY = "Every raw query in shop/ should go through the ORM; track the migration."


def _noting_reviewer(name: str = "implementation") -> Script:
    """Reads the file, records one finding, leaves a comment on a line and proposes a ticket."""
    return Script(
        name,
        (
            calls(("read", {"path": "shop/search.py"})),
            calls(
                (
                    "add_review_node",
                    sample_finding("shop/search.py", 12, priority="P1", confidence=0.9),
                ),
                (
                    "add_note",
                    {"kind": "comment", "body": COMMENT, "path": "shop/search.py", "line": 16},
                ),
                ("add_note", {"kind": "ticket", "title": TICKET_TITLE, "body": TICKET_BODY}),
            ),
            text("Examined shop/search.py; recorded 1 finding, a comment and a ticket."),
        ),
    )


@pytest.fixture
def noted(fake_github, git_repo_factory, fake_model, settings, workspace, alice, tmp_path):
    """acme/shop#7 reviewed at the light tier by a reviewer that leaves a comment and a ticket."""
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model, overrides={"implementation": _noting_reviewer()})
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    use_fake_github(settings, fake_github)
    repo = git_repo_factory("shop")
    repo.commit("base", BASE_FILES, branch="main")
    repo.commit("feature", FEATURE_FILES, branch="feature")
    fake_github.add_repo("acme", "shop", repo.path)
    fake_github.add_pull("acme", "shop", 7, base="main", head="feature", author="dev")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/shop"
    )
    review_round = run_inline(
        review_request(repository=repository, actor=alice, number=7, tier="light", queue=False).pk
    )
    assert review_round.state == ReviewRound.State.FINISHED, review_round.error
    return review_round


def _page(client, review_round) -> str:
    space = review_round.space
    response = client.get(reverse("reviews:detail", args=[space.workspace.slug, space.pk]))
    assert response.status_code == 200
    return response.content.decode()


def _notes_section(html: str) -> str:
    """The notes section as a person sees it, CSRF tokens aside (they differ per render)."""
    found = re.search(r'<section[^>]*id="review-notes".*?</section>', html, flags=re.S)
    assert found, "the page has no Notes from reviewers section"
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", found.group(0))


def _ticket(review_round) -> ReviewerTicket:
    return ReviewerTicket.objects.get(round=review_round)


def _cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


# -- visible: page, report, JSON --------------------------------------------------------------


def test_the_comment_and_the_ticket_show_on_the_page_in_the_report_and_the_json(
    noted, client_for, alice
):
    ticket = _ticket(noted)
    assert (ticket.title, ticket.body, ticket.status) == (TICKET_TITLE, TICKET_BODY, "open")
    assert ticket.stream.agent == "implementation" and ticket.note_index == 1
    client = client_for(alice)
    section = _notes_section(_page(client, noted))
    assert "Notes from reviewers" in section and "(1 comment, 1 proposed ticket)" in section
    assert COMMENT in section and "<strong>implementation</strong>" in section
    # The comment's line links to the cohort that shows the file on this page.
    assert re.search(r'<a href="#cohort-[0-9a-f]{12}"><code>shop/search.py:16</code></a>', section)
    assert TICKET_TITLE in section and TICKET_BODY in section and "Proposed" in section
    assert "Ask to create this GitHub issue" in section and "Dismiss ticket" in section

    space = noted.space
    report = client.get(reverse("reviews:report", args=[space.workspace.slug, space.pk]))
    text_ = report.content.decode()
    notes = text_.split("## Notes from reviewers")[1].split("## Summary")[0]
    assert f"- Comment from implementation on `shop/search.py:16`: {COMMENT}" in notes
    assert f"- Ticket proposed by implementation (round 1, proposed): **{TICKET_TITLE}**" in notes
    assert TICKET_BODY in notes

    data = client.get(f"/api/v1/workspaces/{space.workspace.slug}/reviews/{space.pk}").json()
    assert data["notes"]["comments"] == [
        {
            "reviewer": "implementation",
            "stream": "implementation",
            "body": COMMENT,
            "path": "shop/search.py",
            "line": 16,
        }
    ]
    [json_ticket] = data["notes"]["tickets"]
    assert json_ticket["id"] == ticket.pk and json_ticket["round"] == 1
    assert (json_ticket["title"], json_ticket["body"]) == (TICKET_TITLE, TICKET_BODY)
    assert (json_ticket["status"], json_ticket["status_label"]) == ("open", "proposed")
    assert json_ticket["issue_url"] is None


def test_a_retried_tool_call_records_the_note_once(noted):
    stream = ReviewerStream.objects.get(round=noted, name="implementation")
    before = len(stream.notes)
    index = note_record(
        stream=stream, kind="ticket", fields={"title": TICKET_TITLE, "body": TICKET_BODY}
    )
    stream.refresh_from_db()
    assert index == 1 and len(stream.notes) == before
    assert ReviewerTicket.objects.filter(stream=stream).count() == 1


def test_the_live_page_shows_a_note_left_after_it_opened(noted, alice, client_for):
    stream = ReviewerStream.objects.get(round=noted, name="implementation")
    space = noted.space
    later_comment = "One more thing: the CSV writer never closes its file."
    later_ticket = "Add an integration test for the export"
    cookie = _cookie(alice)

    async def scenario_():
        comm = WebsocketCommunicator(
            application, f"/ws/reviews/{space.pk}/", headers=[ORIGIN, cookie]
        )
        connected, _ = await comm.connect()
        assert connected
        first = await comm.receive_from(timeout=30)
        assert 'id="review-notes"' in first and later_comment not in first
        await database_sync_to_async(note_record)(
            stream=stream,
            kind="comment",
            fields={"body": later_comment, "path": "shop/search.py", "line": 20},
        )
        comment_update = await comm.receive_from(timeout=30)
        await database_sync_to_async(note_record)(
            stream=stream, kind="ticket", fields={"title": later_ticket, "body": "Cover it."}
        )
        ticket_update = await comm.receive_from(timeout=30)
        await comm.disconnect()
        return comment_update, ticket_update

    comment_update, ticket_update = asyncio.run(scenario_())
    assert 'id="review-notes"' in comment_update and 'hx-swap-oob="true"' in comment_update
    assert later_comment in comment_update and later_ticket not in comment_update
    assert later_ticket in ticket_update and "(2 comments, 2 proposed tickets)" in ticket_update
    # What the open page now shows is what a fresh load shows.
    fresh = _page(client_for(alice), noted)
    assert _notes_section(ticket_update) == _notes_section(fresh)


# -- dismiss ----------------------------------------------------------------------------------


def test_a_reviewer_dismisses_a_ticket_with_a_reason_audited(noted, client_for, member_factory):
    bob = member_factory(noted.space.workspace, "reviewer", "bob@example.com")
    ticket = _ticket(noted)
    space = noted.space
    client = client_for(bob)
    url = reverse("reviews:ticket_dismiss", args=[space.workspace.slug, space.pk, ticket.pk])
    response = client.post(url, {"reason": "Already tracked in our backlog."})
    assert response.status_code == 302 and response["Location"].endswith(f"#ticket-{ticket.pk}")
    ticket.refresh_from_db()
    assert ticket.status == "dismissed" and ticket.decided_by == bob
    assert ticket.reason == "Already tracked in our backlog."
    event = AuditEvent.objects.get(action="ticket.dismissed")
    assert event.actor_label == "bob@example.com"
    assert event.target_type == "reviewerticket" and event.target_id == str(ticket.pk)
    assert event.payload["reason"] == "Already tracked in our backlog."
    assert event.payload["title"] == TICKET_TITLE
    section = _notes_section(_page(client, noted))
    assert "Dismissed" in section and "dismissed by bob@example.com" in section
    assert "Dismiss ticket" not in section and "Ask to create this GitHub issue" not in section
    # Twice is refused with a reason, not a second audit row.
    client.post(url, {"reason": "again"})
    assert AuditEvent.objects.filter(action="ticket.dismissed").count() == 1
    report = client.get(reverse("reviews:report", args=[space.workspace.slug, space.pk]))
    assert f"(round 1, dismissed): **{TICKET_TITLE}**" in report.content.decode()


# -- turn into a GitHub issue -----------------------------------------------------------------


def test_a_ticket_becomes_one_github_issue_after_someone_else_approves(
    noted, client_for, member_factory, fake_github
):
    space = noted.space
    ws = space.workspace
    bob = member_factory(ws, "reviewer", "bob@example.com")
    vera = member_factory(ws, "approver", "vera@example.com")
    ticket = _ticket(noted)
    presence_touch(channel_name="vera", workspace_id=ws.pk, user_id=vera.pk)
    bob_client = client_for(bob)
    title = "Move product search to the ORM (shop)"
    body = "Every raw query should go through the ORM.\n\nFound while reviewing acme/shop#7."
    response = bob_client.post(
        reverse("reviews:ticket_issue", args=[ws.slug, space.pk, ticket.pk]),
        {"title": title, "body": body},
    )
    assert response.status_code == 302
    request = ApprovalRequest.objects.get(action_class="issueCreate")
    assert request.status == "pending" and request.requester == bob
    assert request.target_type == "reviewerticket" and request.target_id == str(ticket.pk)
    assert request.payload["repository"] == "acme/shop"
    assert (request.payload["title"], request.payload["body"]) == (title, body)
    ticket.refresh_from_db()
    assert ticket.status == "requested" and ticket.approval_request == request
    assert fake_github.issues("acme", "shop") == []
    section = _notes_section(_page(bob_client, noted))
    assert f"Issue request #{request.pk} waiting for an approver" in section
    assert "Ask to create this GitHub issue" not in section and "Dismiss ticket" not in section

    # The approver sees exactly what would be filed before deciding.
    vera_client = client_for(vera)
    inbox = vera_client.get(reverse("guardrails:approvals", args=[ws.slug])).content.decode()
    assert "Create a GitHub issue in <strong>acme/shop</strong>" in inbox and title in inbox
    # Not by the requester.
    from workspaces.rules import RuleError

    with pytest.raises(RuleError):
        approval_decide(request=request, approver=bob, decision="approve")
    vera_client.post(
        reverse("guardrails:decide", args=[ws.slug, request.pk]), {"decision": "approve"}
    )
    request.refresh_from_db()
    # Approved; the server thread that executes it may already have started.
    assert request.status in {"approved", "executing", "executed"}
    for _ in range(3):  # the worker, a redelivered task, the sweeper
        approval_execute(request_id=request.pk)
    assert background.drain(60)  # embedded: the approval's own execution, in a server thread

    request.refresh_from_db()
    assert request.status == "executed", request.error
    issues = fake_github.issues("acme", "shop")
    assert len(issues) == 1 and len(fake_github.requests_to("POST", r"/repos/acme/shop/issues"))
    assert (issues[0]["title"], issues[0]["body"], issues[0]["state"]) == (title, body, "open")
    assert issues[0]["user"]["login"] == "quorum[bot]"
    assert Execution.objects.filter(request=request).count() == 1
    ticket.refresh_from_db()
    assert ticket.status == "created" and ticket.issue_number == issues[0]["number"]
    assert ticket.issue_url == issues[0]["html_url"]
    executed = AuditEvent.objects.get(action="issueCreate.executed")
    assert executed.actor_label == "quorum (app identity)"
    assert executed.payload["requester"] == "bob@example.com"
    assert executed.payload["approvers"] == ["vera@example.com"]
    assert executed.payload["result"]["url"] == ticket.issue_url

    section = _notes_section(_page(bob_client, noted))
    assert f'<a href="{ticket.issue_url}" rel="noopener">GitHub issue #{ticket.issue_number}</a>'
    assert f'href="{ticket.issue_url}"' in section and "GitHub issue created" in section
    assert "Ask to create this GitHub issue" not in section and "Dismiss ticket" not in section
    data = bob_client.get(f"/api/v1/workspaces/{ws.slug}/reviews/{space.pk}").json()
    assert data["notes"]["tickets"][0]["issue_url"] == ticket.issue_url
    assert data["notes"]["tickets"][0]["status"] == "created"


def test_a_refused_issue_gives_the_ticket_back(noted, client_for, member_factory, fake_github):
    """GitHub answers 410 (issues turned off): the request fails with GitHub's reason, nothing
    is filed, and the ticket can be asked for again or dismissed."""
    space = noted.space
    ws = space.workspace
    bob = member_factory(ws, "reviewer", "bob@example.com")
    vera = member_factory(ws, "approver", "vera@example.com")
    fake_github.repos[("acme", "shop")].has_issues = False
    presence_touch(channel_name="vera", workspace_id=ws.pk, user_id=vera.pk)
    ticket = _ticket(noted)
    bob_client = client_for(bob)
    bob_client.post(reverse("reviews:ticket_issue", args=[ws.slug, space.pk, ticket.pk]))
    request = ApprovalRequest.objects.get(action_class="issueCreate")
    # Without a form the reviewer's title and a body saying where it came from are filed.
    assert request.payload["title"] == TICKET_TITLE
    assert request.payload["body"].startswith(TICKET_BODY)
    assert (
        "Proposed by the implementation reviewer while reviewing acme/shop#7"
        in (request.payload["body"])
    )
    approval_decide(request=request, approver=vera, decision="approve")
    approval_execute(request_id=request.pk)
    # Embedded: the approval's own execution may have claimed it first, in a server thread.
    assert background.drain(60)
    request.refresh_from_db()
    assert request.status == "failed" and "Issues are disabled for this repo" in request.error
    assert fake_github.issues("acme", "shop") == []
    ticket.refresh_from_db()
    assert ticket.status == "requested" and ticket.issue_number is None
    section = _notes_section(_page(bob_client, noted))
    assert f"issue request #{request.pk} failed" in section
    assert "Ask to create this GitHub issue" in section and "Dismiss ticket" in section


def test_issue_create_follows_the_workspace_policy(noted, client_for, member_factory, alice):
    """The admin sets issueCreate's policy like prPublish's: tightening to deny applies at once
    and the next request is refused with the reason, audited."""
    space = noted.space
    ws = space.workspace
    admin_client = client_for(alice)
    settings_url = reverse("guardrails:settings", args=[ws.slug])
    page = admin_client.get(settings_url).content.decode()
    assert "issueCreate" in page and "Create a GitHub issue from a reviewer&#x27;s ticket" in page
    admin_client.post(
        settings_url,
        {
            "action_class": "issueCreate",
            "policy": "deny",
            "approvals_required": 1,
            "expires_after_minutes": 60,
        },
    )
    assert ActionPolicy.objects.get(workspace=ws, action_class="issueCreate").policy == "deny"
    bob = member_factory(ws, "reviewer", "bob@example.com")
    ticket = _ticket(noted)
    response = client_for(bob).post(
        reverse("reviews:ticket_issue", args=[ws.slug, space.pk, ticket.pk]), follow=True
    )
    assert "The workspace policy denies create a github issue" in response.content.decode()
    assert not ApprovalRequest.objects.exists()
    refused = AuditEvent.objects.get(action="checkpoint.refused")
    assert refused.payload["action_class"] == "issueCreate"
    ticket.refresh_from_db()
    assert ticket.status == "open"


# -- who may ----------------------------------------------------------------------------------


def test_a_viewer_can_neither_dismiss_nor_ask_for_an_issue(
    noted, client_for, member_factory, fake_github
):
    space = noted.space
    ws = space.workspace
    viewer = member_factory(ws, "viewer", "val@example.com")
    ticket = _ticket(noted)
    client = client_for(viewer)
    section = _notes_section(_page(client, noted))
    assert TICKET_TITLE in section  # viewers read the notes
    assert "Dismiss ticket" not in section and "Ask to create this GitHub issue" not in section
    for name in ("ticket_dismiss", "ticket_issue"):
        response = client.post(reverse(f"reviews:{name}", args=[ws.slug, space.pk, ticket.pk]))
        assert response.status_code == 403
    ticket.refresh_from_db()
    assert ticket.status == "open" and not ApprovalRequest.objects.exists()
    assert AuditEvent.objects.filter(action="permission.denied").count() == 2
    assert fake_github.issues("acme", "shop") == []


def test_a_ticket_of_another_review_is_not_found(noted, client_for, alice, review_factory):
    other = review_factory(noted.space.workspace)
    ws = noted.space.workspace
    ticket = _ticket(noted)
    response = client_for(alice).post(
        reverse("reviews:ticket_dismiss", args=[ws.slug, other.space_id, ticket.pk])
    )
    assert response.status_code == 404


# -- a local repository -----------------------------------------------------------------------


def test_a_local_review_offers_no_github_issue(
    fake_model, settings, tmp_path, workspace, alice, client_for, member_factory
):
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model, overrides={"implementation": _noting_reviewer()})
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    path = tmp_path / "shop"
    base, head = create_sample_repository(path)
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(path.resolve())
    )
    review_round = run_inline(
        review_request(
            repository=repository, actor=alice, base=base, head=head, tier="light", queue=False
        ).pk
    )
    assert review_round.state == ReviewRound.State.FINISHED, review_round.error
    ticket = _ticket(review_round)
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    client = client_for(bob)
    section = _notes_section(_page(client, review_round))
    assert TICKET_TITLE in section and "Dismiss ticket" in section
    assert "Create a GitHub issue" not in section
    space = review_round.space
    response = client.post(
        reverse("reviews:ticket_issue", args=[workspace.slug, space.pk, ticket.pk]), follow=True
    )
    assert "This review is of a local repository: there is no GitHub repository" in (
        response.content.decode()
    )
    assert not ApprovalRequest.objects.exists()
    ticket.refresh_from_db()
    assert ticket.status == "open"
    client.post(reverse("reviews:ticket_dismiss", args=[workspace.slug, space.pk, ticket.pk]))
    ticket.refresh_from_db()
    assert ticket.status == "dismissed"


# -- the API ----------------------------------------------------------------------------------


def test_the_api_dismisses_and_asks_for_issues_with_the_same_rules(
    noted, client_for, member_factory, alice, fake_github
):
    space = noted.space
    ws = space.workspace
    ticket = _ticket(noted)
    base = f"/api/v1/workspaces/{ws.slug}/reviews/{space.pk}/tickets/{ticket.pk}"
    viewer = client_for(member_factory(ws, "viewer", "val@example.com"))
    for action in ("dismiss", "issue"):
        assert (
            viewer.post(f"{base}/{action}", {}, content_type="application/json").status_code == 403
        )
    bob = member_factory(ws, "reviewer", "bob@example.com")
    bob_client = client_for(bob)
    # Nobody could approve right now: refused with the reason, the ticket unchanged.
    refused = bob_client.post(f"{base}/issue", {}, content_type="application/json")
    assert refused.status_code == 409 and "No approver is connected" in refused.json()["detail"]
    assert refused.json()["ticket"]["status"] == "open"
    bad = bob_client.post(f"{base}/issue", {"title": "   "}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["detail"] == "An issue needs a title."
    vera = member_factory(ws, "approver", "vera@example.com")
    presence_touch(channel_name="vera", workspace_id=ws.pk, user_id=vera.pk)
    pending = bob_client.post(
        f"{base}/issue", {"title": "Track it", "body": "Details."}, content_type="application/json"
    )
    assert pending.status_code == 202
    request = ApprovalRequest.objects.get(pk=pending.json()["request"])
    assert (request.payload["title"], request.payload["body"]) == ("Track it", "Details.")
    assert pending.json()["ticket"]["status"] == "requested"
    again = bob_client.post(f"{base}/issue", {}, content_type="application/json")
    assert again.status_code == 400 and "waiting for an approver" in again.json()["detail"]
    # The requester withdraws; the ticket is given back and can be dismissed.
    bob_client.post(f"/api/v1/workspaces/{ws.slug}/approvals/{request.pk}/withdraw")
    dismissed = bob_client.post(
        f"{base}/dismiss", {"reason": "Not needed."}, content_type="application/json"
    )
    assert dismissed.status_code == 200
    assert dismissed.json()["status"] == "dismissed" and dismissed.json()["reason"] == "Not needed."
    assert fake_github.issues("acme", "shop") == []


def test_an_open_page_follows_the_issue_request_to_the_filed_issue(
    noted, client_for, member_factory, fake_github
):
    space = noted.space
    ws = space.workspace
    bob = member_factory(ws, "reviewer", "bob@example.com")
    vera = member_factory(ws, "approver", "vera@example.com")
    presence_touch(channel_name="vera", workspace_id=ws.pk, user_id=vera.pk)
    ticket = _ticket(noted)
    cookie = _cookie(bob)

    def ask():
        from reviews.services.notes import ticket_issue_request

        return ticket_issue_request(ticket=ticket, actor=bob)

    def deny(request_id):
        request = ApprovalRequest.objects.get(pk=request_id)
        approval_decide(request=request, approver=vera, decision="deny", reason="Not yet.")

    def approve_and_execute(request_id):
        request = ApprovalRequest.objects.get(pk=request_id)
        approval_decide(request=request, approver=vera, decision="approve")
        approval_execute(request_id=request_id)

    async def receive_until(comm, needle):
        while True:
            update = await comm.receive_from(timeout=30)
            if needle in update:
                return update

    async def scenario_():
        comm = WebsocketCommunicator(
            application, f"/ws/reviews/{space.pk}/", headers=[ORIGIN, cookie]
        )
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_from(timeout=30)
        first = await database_sync_to_async(ask)()
        await receive_until(comm, "waiting for an approver")
        # A denial reaches the page through the approvals' own notification.
        await database_sync_to_async(deny)(first.request.pk)
        denied = await receive_until(comm, f"issue request #{first.request.pk} denied")
        result = await database_sync_to_async(ask)()
        waiting = await receive_until(comm, f"Issue request #{result.request.pk} waiting")
        await database_sync_to_async(approve_and_execute)(result.request.pk)
        filed = await receive_until(comm, "GitHub issue created")
        await comm.disconnect()
        return denied, waiting, filed

    denied, waiting, filed = asyncio.run(scenario_())
    assert "Ask to create this GitHub issue" in denied and "Dismiss ticket" in denied
    assert 'id="review-notes"' in waiting and "Ask to create this GitHub issue" not in waiting
    [issue] = fake_github.issues("acme", "shop")
    assert f'href="{issue["html_url"]}"' in filed and f"GitHub issue #{issue['number']}" in filed


def test_a_retried_reviewer_keeps_decided_tickets_and_drops_undecided_ones(
    review_factory, stream_factory, workspace, alice
):
    """A reviewer's attempt that starts again discards its unfinished notes, but a ticket a
    person already decided stays decided, and proposing it again does not make a new one."""
    from reviews.pipeline.attempts import reset_stream as _reset_stream
    from reviews.services.notes import ticket_dismiss

    stream = stream_factory(review_factory(workspace), "security")
    note_record(stream=stream, kind="ticket", fields={"title": "Rotate keys", "body": "Now."})
    note_record(stream=stream, kind="comment", fields={"body": "hm", "path": None, "line": None})
    note_record(stream=stream, kind="ticket", fields={"title": "Undecided", "body": ""})
    decided = ReviewerTicket.objects.get(stream=stream, title="Rotate keys")
    ticket_dismiss(ticket=decided, user=alice, reason="done elsewhere")

    _reset_stream(stream)

    assert list(ReviewerTicket.objects.filter(stream=stream)) == [decided]
    again = note_record(
        stream=stream, kind="ticket", fields={"title": "Rotate keys", "body": "Now."}
    )
    fresh = note_record(stream=stream, kind="ticket", fields={"title": "New idea", "body": ""})
    assert again == decided.note_index == 0 and fresh == 1
    decided.refresh_from_db()
    assert decided.status == "dismissed" and decided.reason == "done elsewhere"
    assert ReviewerTicket.objects.get(stream=stream, note_index=1).title == "New idea"
    stream.refresh_from_db()
    assert [n["kind"] for n in stream.notes] == ["ticket", "ticket"]
