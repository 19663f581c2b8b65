"""A review's conversation through the API: read thread by thread, post as oneself (an agent's
token as the agent), correct within the window, viewers refused and audited, tenants apart;
the review JSON carries the shown round's threads."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from guardrails.models import AuditEvent
from reviews.domain import threads as rules
from reviews.models import ThreadMessage
from reviews.services import threads
from reviews.services.node_recording import node_record
from tests.fixtures import node_payload
from workspaces.services import api_token_create

FILES = {"app/views.py": 40}


@pytest.fixture
def finding(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "security")
    return node_record(stream=stream, payload=node_payload(), file_lines=FILES).node


def _base(finding) -> str:
    return f"/api/v1/workspaces/{finding.space.workspace.slug}/reviews/{finding.space_id}"


def _post(client, url, data):
    return client.post(url, data, content_type="application/json")


def test_two_people_discuss_a_finding_and_the_thread_reads_back_in_order(
    finding, workspace, member_factory, client_for
):
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    carol = member_factory(workspace, "approver", "carol@example.com")
    url = f"{_base(finding)}/threads/node:{finding.pk}"

    first = _post(client_for(bob), f"{url}/messages", {"body": "  Why **P1**?  "})
    assert first.status_code == 201, first.content
    asked = first.json()
    assert (asked["author"], asked["body"], asked["source"]) == (
        "bob@example.com",
        "Why **P1**?",
        "person",
    )
    answer = _post(
        client_for(carol),
        f"{url}/messages",
        {"body": "Tainted input reaches it.", "in_reply_to": asked["id"]},
    )
    assert answer.status_code == 201, answer.content

    viewer = member_factory(workspace, "viewer", "vera@example.com")
    thread = client_for(viewer).get(url).json()
    assert thread["subject"] == f"node:{finding.pk}" and thread["node"] == finding.pk
    assert [(m["author"], m["in_reply_to"]) for m in thread["messages"]] == [
        ("bob@example.com", None),
        ("carol@example.com", asked["id"]),
    ]
    listed = client_for(viewer).get(f"{_base(finding)}/threads").json()
    assert [t["subject"] for t in listed] == [f"node:{finding.pk}"]
    assert len(listed[0]["messages"]) == 2


def test_a_viewer_cannot_post_and_the_refusal_is_audited(
    finding, workspace, member_factory, client_for
):
    viewer = member_factory(workspace, "viewer", "vera@example.com")
    refused = _post(
        client_for(viewer),
        f"{_base(finding)}/threads/node:{finding.pk}/messages",
        {"body": "I disagree."},
    )
    assert refused.status_code == 403
    assert "viewer" in refused.json()["detail"]
    assert not ThreadMessage.objects.exists()
    event = AuditEvent.objects.get(action="permission.denied")
    assert event.actor_label == "vera@example.com"
    assert event.payload["attempted"] == "post in review threads"


def test_an_edit_is_the_authors_within_the_window_and_shows(
    finding, workspace, member_factory, client_for
):
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    carol = member_factory(workspace, "reviewer", "carol@example.com")
    posted = _post(
        client_for(bob), f"{_base(finding)}/threads/node:{finding.pk}/messages", {"body": "P0!"}
    ).json()
    url = f"{_base(finding)}/messages/{posted['id']}"

    other = client_for(carol).patch(url, {"body": "vandalised"}, content_type="application/json")
    assert other.status_code == 403 and "author" in other.json()["detail"]
    edited = client_for(bob).patch(
        url, {"body": "P1, on reflection."}, content_type="application/json"
    )
    assert edited.status_code == 200, edited.content
    assert edited.json()["body"] == "P1, on reflection."
    assert edited.json()["edited_at"] is not None and edited.json()["revisions"] == 1

    ThreadMessage.objects.filter(pk=posted["id"]).update(
        created_at=timezone.now() - rules.EDIT_WINDOW - timedelta(minutes=1)
    )
    late = client_for(bob).patch(url, {"body": "P3"}, content_type="application/json")
    assert late.status_code == 403 and "15 minutes" in late.json()["detail"]
    assert ThreadMessage.objects.get().body == "P1, on reflection."


def test_an_agents_message_is_the_agents(finding, workspace, alice):
    _, secret = api_token_create(user=alice, name="laptop", agent_name="claude-code")
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    posted = _post(
        agent, f"{_base(finding)}/threads/node:{finding.pk}/messages", {"body": "Checked: real."}
    )
    assert posted.status_code == 201, posted.content
    assert posted.json()["source"] == "agent"
    assert posted.json()["author"] == "agent claude-code for alice@example.com"


def test_what_the_review_has_not_is_not_found_and_bad_input_is_refused(
    finding, workspace, member_factory, client_for, review_factory, stream_factory
):
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    client = client_for(bob)
    base = _base(finding)
    assert client.get(f"{base}/threads/node:999999").status_code == 404
    assert client.get(f"{base}/threads/note:1:0").status_code == 404
    assert client.get(f"{base}/threads/topic:1").status_code == 422
    assert client.get(f"{base}/threads?subject=node:{finding.pk}").json() == [
        {"subject": f"node:{finding.pk}", "node": finding.pk, "messages": []}
    ]
    for body in ({"body": ""}, {"body": "   "}, {"body": "x" * 10_001}, {"body": "a", "x": 1}):
        assert _post(client, f"{base}/threads/node:{finding.pk}/messages", body).status_code == 422

    # Another workspace's finding and message are not there for this review.
    elsewhere = review_factory()
    stream = stream_factory(elsewhere, "security")
    foreign = node_record(stream=stream, payload=node_payload(), file_lines=FILES).node
    assert (
        _post(client, f"{base}/threads/node:{foreign.pk}/messages", {"body": "hi"}).status_code
        == 404
    )
    foreign_thread = threads.thread_get(space=foreign.space, key=f"node:{foreign.pk}")
    foreign_message = threads.message_post(thread=foreign_thread, user=bob, body="elsewhere")
    reply = _post(
        client,
        f"{base}/threads/node:{finding.pk}/messages",
        {"body": "hi", "in_reply_to": foreign_message.pk},
    )
    assert reply.status_code == 404
    assert (
        client.patch(
            f"{base}/messages/{foreign_message.pk}", {"body": "x"}, content_type="application/json"
        ).status_code
        == 404
    )
    other_workspace = f"/api/v1/workspaces/{elsewhere.space.workspace.slug}/reviews"
    assert client.get(f"{other_workspace}/{elsewhere.space_id}/threads").status_code == 404


def test_a_reply_answers_a_message_of_the_same_thread(
    finding, workspace, member_factory, client_for, stream_factory
):
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    second = node_record(
        stream=finding.stream, payload=node_payload(title="Another one"), file_lines=FILES
    ).node
    client = client_for(bob)
    base = _base(finding)
    first = _post(client, f"{base}/threads/node:{finding.pk}/messages", {"body": "a"}).json()
    crossed = _post(
        client,
        f"{base}/threads/node:{second.pk}/messages",
        {"body": "b", "in_reply_to": first["id"]},
    )
    assert crossed.status_code == 400 and "same thread" in crossed.json()["detail"]


def test_the_review_json_carries_the_rounds_threads_marked_from_github(
    finding, workspace, member_factory, client_for
):
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    thread = threads.thread_get(space=finding.space, key=f"node:{finding.pk}")
    mine = threads.message_post(thread=thread, user=bob, body="Is this reachable?")
    threads.message_record_github(
        thread=thread,
        login="octo",
        body="Yes, from /search.",
        comment_id=42,
        url="https://github.com/acme/app/pull/5#discussion_r42",
        in_reply_to=mine,
    )
    data = client_for(bob).get(_base(finding)).json()
    assert [t["subject"] for t in data["threads"]] == [f"node:{finding.pk}"]
    ours, theirs = data["threads"][0]["messages"]
    assert ours["github"] is None and ours["proposal"] is None
    assert theirs["source"] == "github" and theirs["author"] == "octo on GitHub"
    assert theirs["github"] == {
        "comment_id": 42,
        "url": "https://github.com/acme/app/pull/5#discussion_r42",
        "posted_at": None,
    }
    assert theirs["in_reply_to"] == mine.pk
