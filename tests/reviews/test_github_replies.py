"""Conversations on GitHub (issue 19, must show): a reply on GitHub to one of Quorum's comments
lands in that finding's thread once, however often it is delivered; a pull request comment that
quotes a finding lands too, one about nothing Quorum said is ignored; an `@quorum` question's
answer is posted on GitHub exactly once after approval (never before), or at once when the
workspace's policy allows answers without approval.

The faithful fake GitHub numbers the published review's comments, takes replies and refuses a
reply to a reply as GitHub does; deliveries are signed with the webhook secret.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils import timezone

from config import background
from guardrails.models import ActionPolicy, ApprovalRequest, AuditEvent, Execution
from guardrails.rules import CheckpointOutcome
from guardrails.services.approvals import approval_decide
from guardrails.services.execution import approval_execute
from reviews.models import PublishedComment, ReviewRound, ThreadMessage
from reviews.services import threads
from reviews.services.github_replies import answer_publish
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm
from reviews.services.publishing import publish_review
from reviews.services.rounds import round_start
from reviews.services.spaces import pull_request_upsert, space_get_or_create, space_status_refresh
from reviews.services.verdicts import round_finalise
from reviews.sources.github_auth import StaticToken
from reviews.sources.github_client import GitHubClient, GitHubValidationError
from tests.fakes.github_server import issue_comment_payload, review_comment_payload, sign
from tests.fixtures import node_payload
from workspaces.models import Repository, RepositoryGrant

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SECRET = "webhook-secret-for-replies"
TOKEN = "ghs_quorum"
BASE = "".join(f"line_{i} = {i}\n" for i in range(1, 41))
HEAD = BASE.replace("line_5 = 5\n", "line_5 = 5 / 0\n").replace(
    "line_20 = 20\n", "line_20 = eval(user_input)\n"
)


@pytest.fixture
def published(fake_github, git_repo_factory, settings, workspace, alice):
    """acme/app#42 reviewed with two inline findings, published on the fake GitHub."""
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = fake_github.base_url, TOKEN
    settings.GITHUB_APP_ID = ""
    repo = git_repo_factory()
    repo.commit("base", {"calc.py": BASE}, branch="main")
    repo.commit("feature", {"calc.py": HEAD}, branch="feature")
    fake_github.add_token(TOKEN, login="quorum-bot")
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull("acme", "app", 42, base="main", head="feature", author="bob")
    repository = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/app")
    RepositoryGrant.objects.create(workspace=workspace, full_name="acme/app")
    pr = pull_request_upsert(
        repository=repository,
        number=42,
        base_ref="main",
        head_ref="feature",
        head_sha=repo.sha("feature"),
    )
    space = space_get_or_create(pull_request=pr)
    review_round = round_start(space=space, head_sha=repo.sha("feature"), tier="thorough")
    impl = review_round.streams.create(name="implementation", agent="implementation")
    sec = review_round.streams.create(name="security", agent="security")
    lines = {"calc.py": 40}
    division = node_record(
        stream=impl,
        payload=node_payload(
            title="Division by zero",
            body="Dividing by zero raises ZeroDivisionError on every import.",
            priority="P0",
            anchor={"path": "calc.py", "start_line": 5, "end_line": 5},
        ),
        file_lines=lines,
    ).node
    evaluation = node_record(
        stream=sec,
        payload=node_payload(
            title="eval on user input",
            body="eval runs whatever the user typed: arbitrary code execution.",
            anchor={"path": "calc.py", "start_line": 20, "end_line": 20},
        ),
        file_lines=lines,
    ).node
    untested = node_record(
        stream=impl,
        payload=node_payload(
            title="No tests for calc",
            body="Nothing exercises calc.py; a regression would go unnoticed.",
            priority="P2",
            anchor=None,
        ),
        file_lines=lines,
    ).node
    node_confirm(node=division, by_agent="security")
    node_confirm(node=evaluation, by_agent="implementation")
    round_finalise(review_round=review_round)
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)
    record = publish_review(space=space, selection="all_open", approve_on_ship=False, actor=alice)
    assert record.state == "posted", record.error
    return space, {"division": division, "eval": evaluation, "untested": untested}


def _deliver(client, event: str, payload: dict, *, delivery: str):
    body = json.dumps(payload).encode()
    response = client.post(
        "/webhooks/github/",
        body,
        content_type="application/json",
        HTTP_X_GITHUB_EVENT=event,
        HTTP_X_GITHUB_DELIVERY=delivery,
        HTTP_X_HUB_SIGNATURE_256=sign(SECRET.encode(), body),
    )
    assert response.status_code == 200, response.content
    return response.json()["detail"]


def _root(node) -> int:
    return PublishedComment.objects.get(node=node).github_comment_id


def _reply(client, fake, comment: dict, *, delivery: str, action: str = "created") -> str:
    payload = review_comment_payload(fake, "acme", "app", 42, comment, action=action)
    return _deliver(client, "pull_request_review_comment", payload, delivery=delivery)


def _comment(client, fake, comment: dict, *, delivery: str) -> str:
    payload = issue_comment_payload(fake, "acme", "app", 42, comment)
    return _deliver(client, "issue_comment", payload, delivery=delivery)


# -- which comment is which finding ------------------------------------------------------------


def test_publishing_keeps_the_github_id_of_each_findings_comment(published, fake_github):
    space, nodes = published
    on_github = {c["id"]: c for c in fake_github.review_comments("acme", "app")}
    kept = {p.node_id: p for p in PublishedComment.objects.filter(space=space)}
    assert set(kept) == {nodes["division"].pk, nodes["eval"].pk}
    for row in kept.values():
        comment = on_github[row.github_comment_id]
        assert comment["body"] == row.body and row.html_url == comment["html_url"]
    assert "Division by zero" in kept[nodes["division"].pk].body
    assert on_github[kept[nodes["division"].pk].github_comment_id]["line"] == 5


# -- replies come in ---------------------------------------------------------------------------


def test_a_reply_lands_in_its_findings_thread_once_even_delivered_three_times(
    published, fake_github, client
):
    space, nodes = published
    root = _root(nodes["division"])
    reply = fake_github.reply_as(
        "acme", "app", 42, root, "Not a bug: the divisor is checked above.", login="dev"
    )
    outcomes = [_reply(client, fake_github, reply, delivery="d-reply") for _ in range(3)]
    key = f"node:{nodes['division'].pk}"
    assert outcomes[0] == f"stored in thread {key}"
    assert outcomes[1:] == ["duplicate delivery: already processed"] * 2
    # A second delivery id for the same comment (a redelivery GitHub numbered anew) stores
    # nothing either.
    assert _reply(client, fake_github, reply, delivery="d-reply-again") == (
        f"already in thread {key}"
    )
    (message,) = ThreadMessage.objects.filter(space=space)
    assert (message.subject, message.node_id, message.source) == (
        key,
        nodes["division"].pk,
        "github",
    )
    assert message.author_label == "dev on GitHub"
    assert message.body == "Not a bug: the divisor is checked above."
    assert (message.github_comment_id, message.github_root_id) == (reply["id"], root)
    assert message.github_url == reply["html_url"] and message.posted_at is None

    # A reply to that reply joins the same conversation on GitHub, and the same thread here.
    second = fake_github.reply_as("acme", "app", 42, reply["id"], "It is not.", login="ann")
    assert second["in_reply_to_id"] == root
    assert _reply(client, fake_github, second, delivery="d-second") == f"stored in thread {key}"
    # A client that names the reply itself: the message answers the stored one.
    third = {**fake_github.reply_as("acme", "app", 42, root, "Both?", login="cy")}
    third["in_reply_to_id"] = reply["id"]
    assert _reply(client, fake_github, third, delivery="d-third") == f"stored in thread {key}"
    answered = ThreadMessage.objects.get(github_comment_id=third["id"])
    assert answered.in_reply_to_id == message.pk and answered.github_root_id == root
    assert ThreadMessage.objects.filter(space=space, subject=key).count() == 3


def test_what_is_not_a_reply_to_quorum_is_not_stored(published, fake_github, client):
    space, nodes = published
    root = _root(nodes["eval"])
    # A new conversation of someone's own, on a line.
    own = fake_github.repos[("acme", "app")].review_comments[root]
    with fake_github._lock:
        fresh = fake_github._new_review_comment(
            fake_github.repos[("acme", "app")], 42, own, "Typo here.", login="dev"
        )
    assert _reply(client, fake_github, fresh, delivery="d-own") == (
        "ignored: not a reply to one of Quorum's comments"
    )
    # A bot's reply (Quorum's own app, or any other): never stored, never answered.
    bot = fake_github.reply_as("acme", "app", 42, root, "@quorum beep", login="ci[bot]")
    bot["user"]["type"] = "Bot"
    assert "is a bot or an app" in _reply(client, fake_github, bot, delivery="d-bot")
    # An edit or a deletion changes nothing: the thread keeps what was written first.
    reply = fake_github.reply_as("acme", "app", 42, root, "First words.", login="dev")
    _reply(client, fake_github, reply, delivery="d-first")
    edited = {**reply, "body": "Other words."}
    assert "changes nothing here" in _reply(
        client, fake_github, edited, delivery="d-edit", action="edited"
    )
    assert "changes nothing here" in _reply(
        client, fake_github, edited, delivery="d-del", action="deleted"
    )
    (message,) = ThreadMessage.objects.filter(space=space)
    assert message.body == "First words." and message.edited_at is None
    # A disconnected (archived) repository's reviews are read-only: nothing more is stored.
    Repository.objects.filter(full_name="acme/app").update(archived_at=timezone.now())
    later = fake_github.reply_as("acme", "app", 42, root, "Anyone?", login="dev")
    assert "is disconnected in Quorum" in _reply(client, fake_github, later, delivery="d-arch")
    assert ThreadMessage.objects.filter(space=space).count() == 1


def test_a_pull_request_comment_lands_only_when_it_quotes_or_links_a_finding(
    published, fake_github, client
):
    space, nodes = published
    quoting = fake_github.comment_as(
        "acme",
        "app",
        42,
        "> eval runs whatever the user typed\n\nOnly admins reach this form.",
        login="dev",
    )
    key = f"node:{nodes['eval'].pk}"
    assert _comment(client, fake_github, quoting, delivery="d-quote") == f"stored in thread {key}"
    message = ThreadMessage.objects.get(github_comment_id=quoting["id"])
    assert message.subject == key and message.github_root_id is None

    link = PublishedComment.objects.get(node=nodes["division"]).html_url
    linking = fake_github.comment_as("acme", "app", 42, f"About {link}: fixed.", login="dev")
    assert _comment(client, fake_github, linking, delivery="d-link") == (
        f"stored in thread node:{nodes['division'].pk}"
    )

    # A finding the review carried in its body (no line to comment on): quoted, it lands too.
    body_quote = fake_github.comment_as(
        "acme", "app", 42, "> a regression would go unnoticed\n\nTests are in #43.", login="dev"
    )
    assert _comment(client, fake_github, body_quote, delivery="d-body") == (
        f"stored in thread node:{nodes['untested'].pk}"
    )

    unrelated = fake_github.comment_as("acme", "app", 42, "> LGTM\n\nShip it.", login="dev")
    assert _comment(client, fake_github, unrelated, delivery="d-none") == (
        "ignored: not about a finding"
    )
    assert ThreadMessage.objects.filter(space=space).count() == 3


# -- answers go out ----------------------------------------------------------------------------


def _question(client, fake, node, body: str, *, delivery: str = "d-q") -> ThreadMessage:
    asked = fake.reply_as("acme", "app", 42, _root(node), body, login="dev")
    detail = _reply(client, fake, asked, delivery=delivery)
    assert detail.endswith("a question for the reviewer"), detail
    return ThreadMessage.objects.get(github_comment_id=asked["id"])


def _answer(space, node, question: ThreadMessage) -> ThreadMessage:
    thread = threads.thread_get(space=space, key=f"node:{node.pk}")
    return threads.message_post_reviewer(
        thread=thread,
        stream=node.stream,
        body="The divisor is a literal zero on line 5: it always raises.",
        in_reply_to=question,
    )


def test_a_question_gets_one_answer_on_github_after_approval(
    published, fake_github, client, client_for, member_factory
):
    space, nodes = published
    ws = space.workspace
    node = nodes["division"]
    question = _question(client, fake_github, node, "@quorum why is this a P0?")
    assert AuditEvent.objects.filter(
        action="thread.question_received", payload__message=question.pk
    ).exists()
    answer = _answer(space, node, question)
    before = len(fake_github.review_comments("acme", "app"))

    # Nobody here asked yet and the workspace wants approval: nothing is requested or posted.
    waiting = answer_publish(answer=answer, question=question, requester=None)
    assert waiting.outcome is CheckpointOutcome.PENDING and waiting.request is None
    assert not ApprovalRequest.objects.exists()

    bob = member_factory(ws, "reviewer", "bob@example.com")
    vera = member_factory(ws, "approver", "vera@example.com")
    victor = member_factory(ws, "viewer", "victor@example.com")
    ask_url = reverse("reviews:answer_post", args=[ws.slug, space.pk, answer.pk])
    assert client_for(victor).post(ask_url).status_code == 403
    assert AuditEvent.objects.get(action="permission.denied").actor_label == "victor@example.com"
    # Only an answer to a GitHub question goes to GitHub.
    response = client_for(bob).post(
        reverse("reviews:answer_post", args=[ws.slug, space.pk, question.pk]), follow=True
    )
    assert "does not answer a question asked on GitHub" in response.content.decode()
    response = client_for(bob).post(ask_url)
    assert response.status_code == 302 and response["Location"].endswith(f"#message-{answer.pk}")
    request = ApprovalRequest.objects.get()
    assert request.action_class == "threadAnswer" and request.requester == bob
    assert request.payload["reply_to"] == _root(node)
    assert request.payload["body"].startswith(answer.body)
    assert len(fake_github.review_comments("acme", "app")) == before  # never before approval

    # The approver reads exactly what would be posted, and where.
    inbox = client_for(vera).get(reverse("guardrails:approvals", args=[ws.slug]))
    html = inbox.content.decode()
    assert "Post a reviewer's answer on <strong>acme/app#42</strong>" in html
    assert f"review comment {_root(node)}" in html and "always raises." in html
    approval_decide(request=request, approver=vera, decision="approve")
    for _ in range(3):  # the worker, a redelivered task, the sweeper
        approval_execute(request_id=request.pk)
    assert background.drain(60)  # embedded: the approval's own execution, in a server thread
    request.refresh_from_db()
    assert request.status == "executed", request.error
    assert Execution.objects.filter(request=request).count() == 1
    posted = [
        c
        for c in fake_github.review_comments("acme", "app")
        if c["body"] == request.payload["body"]
    ]
    assert len(posted) == 1 and posted[0]["in_reply_to_id"] == _root(node)
    assert len(fake_github.requests_to("POST", r"/repos/acme/app/pulls/42/comments/\d+/replies"))
    answer.refresh_from_db()
    assert answer.posted_at is not None and answer.github_comment_id == posted[0]["id"]
    assert answer.github_url == posted[0]["html_url"]

    # Asked again, or GitHub's webhook about Quorum's own reply: nothing more.
    again = client_for(bob).post(ask_url, follow=True)
    assert "Answer posted on GitHub." in again.content.decode()
    assert ApprovalRequest.objects.count() == 1
    assert _reply(client, fake_github, posted[0], delivery="d-own-answer") == (
        "ignored: Quorum posted this comment"
    )
    assert ThreadMessage.objects.filter(space=space).count() == 2
    replies = fake_github.requests_to("POST", r"/repos/acme/app/pulls/42/comments/\d+/replies")
    assert len(replies) == 1
    executed = AuditEvent.objects.get(action="threadAnswer.executed")
    assert executed.payload["requester"] == "bob@example.com"
    assert executed.payload["approvers"] == ["vera@example.com"]


def test_with_the_policy_allowing_answers_the_app_posts_without_approval(
    published, fake_github, client
):
    space, nodes = published
    ActionPolicy.objects.create(
        workspace=space.workspace, action_class="threadAnswer", policy="allow"
    )
    node = nodes["eval"]
    # Asked on the pull request's conversation: answered there.
    comment = fake_github.comment_as(
        "acme", "app", 42, "> arbitrary code execution\n\n@Quorum is int() enough?", login="dev"
    )
    assert _comment(client, fake_github, comment, delivery="d-ask").endswith(
        "a question for the reviewer"
    )
    question = ThreadMessage.objects.get(github_comment_id=comment["id"])
    answer = _answer(space, node, question)
    result = answer_publish(answer=answer, question=question, requester=None)
    assert result.outcome is CheckpointOutcome.ALLOWED, result.reason
    assert not ApprovalRequest.objects.exists()
    answers = [c for c in fake_github.issue_comments("acme", "app") if c["id"] != comment["id"]]
    assert len(answers) == 1 and answers[0]["body"].startswith(answer.body)
    assert answers[0]["user"]["login"] == "quorum-bot"
    assert answer_publish(answer=answer, question=question, requester=None).result == (
        result.result
    )
    assert len(fake_github.requests_to("POST", r"/repos/acme/app/issues/42/comments")) == 1
    executed = AuditEvent.objects.get(action="threadAnswer.executed")
    assert executed.actor_label == "quorum (app identity)"
    assert executed.payload["approvers"] == []


def test_a_denying_policy_refuses_the_answer_audited(published, fake_github, client):
    space, nodes = published
    ActionPolicy.objects.create(
        workspace=space.workspace, action_class="threadAnswer", policy="deny"
    )
    node = nodes["division"]
    question = _question(client, fake_github, node, "@quorum sure?")
    answer = _answer(space, node, question)
    result = answer_publish(answer=answer, question=question, requester=None)
    assert result.outcome is CheckpointOutcome.REFUSED
    assert AuditEvent.objects.get(action="checkpoint.refused").payload["action_class"] == (
        "threadAnswer"
    )
    answer.refresh_from_db()
    assert answer.posted_at is None


def test_github_refuses_a_reply_to_a_reply_and_quorum_replies_to_the_conversation(
    published, fake_github, client
):
    space, nodes = published
    root = _root(nodes["division"])
    reply = fake_github.reply_as("acme", "app", 42, root, "A reply.", login="dev")
    with GitHubClient(StaticToken(TOKEN), base_url=fake_github.base_url) as github:
        with pytest.raises(GitHubValidationError):
            github.reply_to_review_comment("acme", "app", 42, reply["id"], body="Nested?")
        nested = github.reply_to_review_comment("acme", "app", 42, root, body="Top-level.")
    assert nested["in_reply_to_id"] == root


# -- the handle ----------------------------------------------------------------------------------


def test_an_admin_sets_the_handle_that_makes_a_question(
    published, fake_github, client, client_for, alice, member_factory
):
    space, nodes = published
    ws = space.workspace
    url = reverse("workspaces:github_handle", args=[ws.slug])
    reviewer = member_factory(ws, "reviewer", "rita@example.com")
    assert client_for(reviewer).post(url, {"github_handle": "reviewbot"}).status_code == 403
    assert AuditEvent.objects.filter(action="permission.denied").exists()
    admin = client_for(alice)
    bad = admin.post(url, {"github_handle": "-bot"})
    assert bad.status_code == 400 and "spelt like a GitHub login" in bad.content.decode()
    assert admin.post(url, {"github_handle": "@ReviewBot"}).status_code == 302
    ws.refresh_from_db()
    assert ws.github_handle == "reviewbot"
    assert AuditEvent.objects.get(action="rules.github_handle_changed").payload == {
        "before": "quorum",
        "after": "reviewbot",
    }
    page = admin.get(reverse("workspaces:general", args=[ws.slug])).content.decode()
    assert 'value="reviewbot"' in page

    root = _root(nodes["division"])
    old = fake_github.reply_as("acme", "app", 42, root, "@quorum still there?", login="dev")
    assert _reply(client, fake_github, old, delivery="d-old").endswith(f"{nodes['division'].pk}")
    _question(client, fake_github, nodes["division"], "@reviewbot why?", delivery="d-new")

    api = f"/api/v1/workspaces/{ws.slug}/github"
    assert admin.get(api).json() == {"handle": "reviewbot"}
    assert admin.put(api, {"handle": "a--b"}, content_type="application/json").status_code == 400
    put = admin.put(api, {"handle": "Quorum"}, content_type="application/json")
    assert put.status_code == 200 and put.json() == {"handle": "quorum"}


def test_a_huge_reply_is_stored_capped_like_a_message(published, fake_github, client):
    """GitHub takes comments of up to 65,536 characters; a reply is stored as a thread message
    is, at most BODY_MAX (and a pull request comment that quotes a finding likewise)."""
    from reviews.domain.threads import BODY_MAX

    space, nodes = published
    root = _root(nodes["division"])
    huge = "Not a bug. " + "x" * 200_000
    reply = fake_github.reply_as("acme", "app", 42, root, huge, login="dev")
    assert _reply(client, fake_github, reply, delivery="d-huge").startswith("stored in thread")
    stored = ThreadMessage.objects.get(github_comment_id=reply["id"])
    assert stored.body.startswith("Not a bug.") and len(stored.body) <= BODY_MAX
    quoting = fake_github.comment_as(
        "acme", "app", 42, "> eval runs whatever the user typed\n\n" + "y" * 200_000, login="dev"
    )
    _comment(client, fake_github, quoting, delivery="d-huge-quote")
    assert len(ThreadMessage.objects.get(github_comment_id=quoting["id"]).body) <= BODY_MAX
