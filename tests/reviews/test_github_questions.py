"""The whole way of a question asked on GitHub: a signed `@quorum` reply to a finding's comment
(delivered three times) reaches the reviewer that wrote the finding, on the scripted fake model;
its answer lands in the thread, and is posted back on the fake GitHub exactly once, after a
person asked for it and an approver approved."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from config import background
from guardrails.models import ActionPolicy, ApprovalRequest
from guardrails.services.approvals import approval_decide
from guardrails.services.execution import approval_execute
from reviews.models import ModelCall, ThreadMessage
from tests.fakes.model_server import Script, answer
from tests.reviews.pipeline_scenarios import model_settings
from tests.reviews.test_asking import ASKED, _wait_for_answer
from tests.reviews.test_github_replies import _reply, _root, published  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

REPLIES = r"/repos/acme/app/pulls/42/comments/\d+/replies"


def test_a_question_on_github_is_answered_by_its_reviewer_and_posted_once_after_approval(
    published,  # noqa: F811
    fake_github,
    fake_model,
    client,
    client_for,
    member_factory,
    settings,
):
    space, nodes = published
    node = nodes["division"]
    model_settings(settings, fake_model)
    settings.REDIS_URL = ""  # embedded: the question is answered in a server thread
    fake_model.add_script(
        Script(
            "ask", (answer(answer="The divisor on line 5 is a literal 0: every import fails."),)
        ),
        marker=ASKED,
    )
    asked = fake_github.reply_as(
        "acme", "app", 42, _root(node), "@quorum why is this a P0?", login="dev"
    )
    for delivery in ("q-1", "q-1", "q-2"):  # GitHub's redelivery, and a second delivery id
        _reply(client, fake_github, asked, delivery=delivery)

    question = ThreadMessage.objects.get(space=space, github_comment_id=asked["id"])
    reply = _wait_for_answer(question)
    assert reply.author_label == node.stream.name and reply.stream_id == node.stream_id
    assert reply.body == "The divisor on line 5 is a literal 0: every import fails."
    assert background.drain(60)  # a second answer, if any delivery asked again, is in by now
    assert ThreadMessage.objects.filter(space=space, subject=f"node:{node.pk}").count() == 2
    # One question, one agent run (a loaded machine may make its client retry a request).
    assert ModelCall.objects.filter(round=node.round, role="ask").count() == 1
    requests = [r for r in fake_model.recorded() if ASKED in r.body]
    prompt = json.dumps(json.loads(requests[-1].body)["messages"])
    assert "why is this a P0?" in prompt and "Division by zero" in prompt
    # The workspace wants approval and nobody here asked yet: nothing went to GitHub.
    assert not fake_github.requests_to("POST", REPLIES) and not ApprovalRequest.objects.exists()

    # The page offers to post it; a reviewer asks, an approver approves, it is posted once.
    ws = space.workspace
    bob = member_factory(ws, "reviewer", "bob@example.com")
    vera = member_factory(ws, "approver", "vera@example.com")
    page = client_for(bob).get(reverse("reviews:detail", args=[ws.slug, space.pk]))
    post_url = reverse("reviews:answer_post", args=[ws.slug, space.pk, reply.pk])
    assert post_url in page.content.decode()
    assert client_for(bob).post(post_url).status_code == 302
    request = ApprovalRequest.objects.get(action_class="threadAnswer")
    assert not fake_github.requests_to("POST", REPLIES)
    approval_decide(request=request, approver=vera, decision="approve")
    for _ in range(2):  # the worker and a redelivered task
        approval_execute(request_id=request.pk)
    assert background.drain(60)  # embedded: the approval's own execution, in a server thread
    posted = fake_github.requests_to("POST", REPLIES)
    assert len(posted) == 1
    reply.refresh_from_db()
    assert reply.posted_at is not None and reply.github_comment_id is not None
    on_github = [
        c for c in fake_github.review_comments("acme", "app") if c["id"] == reply.github_comment_id
    ]
    assert on_github[0]["in_reply_to_id"] == _root(node)
    assert on_github[0]["body"].startswith("The divisor on line 5 is a literal 0")
    page = client_for(bob).get(reverse("reviews:detail", args=[ws.slug, space.pk]))
    assert post_url not in page.content.decode() and "posted on GitHub" in page.content.decode()


def test_where_the_workspace_allows_it_the_answer_goes_back_by_itself_once(
    published,  # noqa: F811
    fake_github,
    fake_model,
    client,
    settings,
):
    space, nodes = published
    node = nodes["division"]
    ActionPolicy.objects.create(
        workspace=space.workspace, action_class="threadAnswer", policy="allow"
    )
    model_settings(settings, fake_model)
    settings.REDIS_URL = ""
    fake_model.add_script(
        Script("ask", (answer(answer="Line 5 divides by a literal 0."),)), marker=ASKED
    )
    asked = fake_github.reply_as("acme", "app", 42, _root(node), "@quorum really?", login="dev")
    for delivery in ("a-1", "a-1", "a-2"):
        _reply(client, fake_github, asked, delivery=delivery)
    reply = _wait_for_answer(ThreadMessage.objects.get(space=space, github_comment_id=asked["id"]))
    assert background.drain(60)  # the answer's post, which the answer queued
    reply.refresh_from_db()
    assert reply.posted_at is not None
    posted = fake_github.requests_to("POST", REPLIES)
    assert len(posted) == 1 and not ApprovalRequest.objects.exists()
    # GitHub tells Quorum about its own reply: ignored, no question, no second answer.
    own = next(
        c for c in fake_github.review_comments("acme", "app") if c["id"] == reply.github_comment_id
    )
    assert (
        _reply(client, fake_github, own, delivery="a-own") == "ignored: Quorum posted this comment"
    )
    assert background.drain(60)
    assert len(fake_github.requests_to("POST", REPLIES)) == 1
    assert ModelCall.objects.filter(round=node.round, role="ask").count() == 1
