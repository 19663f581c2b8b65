"""Threads on the guided review page: under each finding (list and diff), disagreement and
reviewer note; posting and editing from the page with and without htmx; who may."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from guardrails.models import AuditEvent
from reviews.models import ThreadMessage
from reviews.services import threads
from reviews.services.node_recording import node_record
from reviews.services.notes import note_record
from tests.fixtures import node_payload

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def discussed(review_factory, stream_factory, workspace, member_factory):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "implementation")
    node = node_record(stream=stream, payload=node_payload(title="Unchecked input")).node
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    return review_round.space, node, bob


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _page(client, space) -> str:
    response = client.get(reverse("reviews:detail", args=[space.workspace.slug, space.pk]))
    assert response.status_code == 200
    return response.content.decode()


def _thread(html: str, key: str, pre: str = "") -> str:
    dom = key.replace(":", "-")
    marker = f'id="{pre}thread-{dom}"'
    assert marker in html, f"no thread {pre}{key} on the page"
    return re.split(r"</details>\s*</div>", html.split(marker, 1)[1], maxsplit=1)[0]


def _post_url(space, key: str) -> str:
    return reverse("reviews:thread_post", args=[space.workspace.slug, space.pk, key])


def _edit_url(space, message) -> str:
    return reverse("reviews:thread_edit", args=[space.workspace.slug, space.pk, message.pk])


def test_a_reply_without_javascript_lands_in_the_findings_thread_rendered_and_attributed(
    discussed, alice
):
    space, node, bob = discussed
    key = f"node:{node.pk}"
    client = _client(alice)
    assert "Start the discussion" in _thread(_page(client, space), key)

    body = "Is this **reachable**? <script>alert(1)</script> cc @bob"
    response = client.post(_post_url(space, key), {"body": body})
    assert response.status_code == 302
    assert response["Location"].endswith(f"#thread-node-{node.pk}")

    thread = _thread(_page(client, space), key)
    assert "Discussion (1 message)" in thread
    assert "<strong>reachable</strong>" in thread  # markdown, rendered
    assert "<script>" not in thread and "&lt;script&gt;" in thread  # raw HTML stays text
    assert "alice@example.com" in thread and ">person</span>" in thread
    message = ThreadMessage.objects.get(subject=key)
    assert message.author == alice and message.node == node


def test_an_htmx_reply_answers_with_the_thread_and_its_copy_in_the_diff(discussed, alice):
    space, node, bob = discussed
    key = f"node:{node.pk}"
    response = _client(bob).post(
        _post_url(space, key),
        {"body": "Looks fine to me"},
        HX_TARGET=f"thread-node-{node.pk}",
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith(f'<div class="thread" id="thread-node-{node.pk}"')
    assert "Looks fine to me" in html and "bob@example.com" in html


def test_an_empty_reply_is_refused_with_the_reason_shown(discussed, alice):
    space, node, bob = discussed
    key = f"node:{node.pk}"
    client = _client(alice)
    response = client.post(_post_url(space, key), {"body": "   "}, follow=True)
    assert "Write something: an empty message is not posted." in response.content.decode()
    refused = client.post(_post_url(space, key), {"body": ""}, **HTMX)
    assert refused.status_code == 400
    assert "empty message" in refused.content.decode()
    assert client.post(_post_url(space, "node:999999"), {"body": "hi"}).status_code == 404
    assert client.post(_post_url(space, "topic:1"), {"body": "hi"}, **HTMX).status_code == 400
    assert not ThreadMessage.objects.exists()


def test_a_viewer_reads_the_thread_but_has_no_form_and_a_forged_post_is_refused_and_audited(
    discussed, alice, member_factory
):
    space, node, bob = discussed
    key = f"node:{node.pk}"
    mine = threads.message_post(
        thread=threads.thread_get(space=space, key=key), user=alice, body="First thoughts"
    )
    viewer = member_factory(space.workspace, "viewer", "vera@example.com")
    client = _client(viewer)
    thread = _thread(_page(client, space), key)
    assert "First thoughts" in thread
    assert "<textarea" not in thread and "Save edit" not in thread
    assert "Your role (viewer) can read this discussion but not post in it" in thread

    for url in (_post_url(space, key), _edit_url(space, mine)):
        assert client.post(url, {"body": "sneaky"}).status_code == 403
    assert list(ThreadMessage.objects.values_list("body", flat=True)) == ["First thoughts"]
    denied = AuditEvent.objects.filter(action="permission.denied").order_by("pk")
    assert [e.payload["attempted"] for e in denied] == [
        "post in threads",
        "edit thread messages",
    ]


def test_the_author_edits_within_the_window_and_the_message_shows_as_edited(discussed, alice):
    space, node, bob = discussed
    key = f"node:{node.pk}"
    message = threads.message_post(
        thread=threads.thread_get(space=space, key=key), user=alice, body="Tpyo here"
    )
    author, other = _client(alice), _client(bob)
    assert f'id="edit-{message.pk}"' in _thread(_page(author, space), key)
    assert f'id="edit-{message.pk}"' not in _thread(_page(other, space), key)

    # Someone else's message: refused, unchanged.
    refused = other.post(_edit_url(space, message), {"body": "Mine now"}, **HTMX)
    assert refused.status_code == 403
    assert "Only its author may edit a message." in refused.content.decode()

    response = author.post(_edit_url(space, message), {"body": "Typo here"})
    assert response.status_code == 302
    thread = _thread(_page(other, space), key)
    assert "Typo here" in thread and "Tpyo" not in thread
    assert 'class="thread-edited">edited <time' in thread

    # After the window the form is gone and an edit is refused.
    ThreadMessage.objects.filter(pk=message.pk).update(
        created_at=message.created_at - timedelta(minutes=16)
    )
    assert f'id="edit-{message.pk}"' not in _thread(_page(author, space), key)
    late = author.post(_edit_url(space, message), {"body": "Later"}, follow=True)
    assert "may be edited for 15 minutes" in late.content.decode()
    assert ThreadMessage.objects.get(pk=message.pk).body == "Typo here"


def test_github_messages_say_where_they_came_from_or_went(discussed, alice):
    space, node, bob = discussed
    key = f"node:{node.pk}"
    thread_ = threads.thread_get(space=space, key=key)
    threads.message_record_github(
        thread=thread_, login="octo", body="Why?", comment_id=77, url="https://github.com/x#c77"
    )
    answer = threads.message_post(thread=thread_, user=alice, body="Because.")
    threads.message_posted_on_github(message=answer, comment_id=78)
    thread = _thread(_page(_client(alice), space), key)
    assert "octo on GitHub" in thread and ">from GitHub</span>" in thread
    assert ">posted on GitHub</span>" in thread
    assert 'href="https://github.com/x#c77"' in thread


def test_disagreements_and_reviewer_notes_have_their_threads(
    review_factory, stream_factory, workspace, alice
):
    review_round = review_factory(workspace)
    impl = stream_factory(review_round, "implementation")
    qual = stream_factory(review_round, "quality")
    anchor = {"path": "app/views.py", "start_line": 20, "end_line": 20}
    first = node_record(stream=impl, payload=node_payload(priority="P0", anchor=anchor)).node
    node_record(stream=qual, payload=node_payload(priority="P3", type="suggestion", anchor=anchor))
    index = note_record(stream=impl, kind="comment", fields={"body": "Fixed page size?"})
    space = review_round.space
    client = _client(alice)
    html = _page(client, space)
    disagreement = f"disagreement:{first.pk}"
    note = f"note:{impl.pk}:{index}"
    for key in (disagreement, note):
        assert "Start the discussion" in _thread(html, key)
        assert client.post(_post_url(space, key), {"body": f"About {key}"}).status_code == 302
    html = _page(client, space)
    assert f"About {disagreement}" in _thread(html, disagreement)
    assert f"About {note}" in _thread(html, note)


def test_threads_cost_the_page_no_query_per_thread(discussed, alice, stream_factory):
    space, node, bob = discussed
    client = _client(alice)

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            _page(client, space)
        return len(ctx.captured_queries)

    queries()  # the first request reads what later ones find cached
    before = queries()
    stream = node.stream
    for i in range(4):
        other = node_record(
            stream=stream,
            payload=node_payload(
                title=f"Another {i}", anchor={"path": f"m{i}.py", "start_line": 1, "end_line": 1}
            ),
        ).node
        for user in (alice, bob):
            threads.message_post(
                thread=threads.thread_get(space=space, key=f"node:{other.pk}"),
                user=user,
                body=f"note {i}",
            )
    html = _page(client, space)
    assert len(re.findall(r">note \d</p>", html)) == 8
    assert queries() == before
