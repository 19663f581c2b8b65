"""The space's conversation: subjects, messages, edits, GitHub replies once, mentions told."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain import threads as rules
from reviews.models import ThreadMessage, ThreadMessageRevision
from reviews.services import threads
from reviews.services.node_recording import node_record
from reviews.services.thread_mentions import mentions_tell
from tests.fixtures import node_payload

FILES = {"app/views.py": 40}


# -- the rules -------------------------------------------------------------------------------


@given(st.sampled_from(list(rules.SubjectKind)), st.integers(0, 10**9), st.integers(0, 999))
def test_a_subject_key_reads_back_as_itself(kind, first, second):
    ids = (first, second) if kind is rules.SubjectKind.NOTE else (first,)
    subject = rules.Subject(kind, ids)
    assert rules.Subject.parse(subject.key) == subject


@pytest.mark.parametrize(
    "key", ["", "node", "node:", "node:x", "node:1:2", "note:1", "topic:1", "node:-1", "node:١"]
)
def test_a_subject_that_names_nothing_is_refused_with_the_forms_it_takes(key):
    with pytest.raises(rules.ThreadError):
        rules.Subject.parse(key)


@given(st.text(max_size=200))
def test_mentions_are_handles_never_addresses_or_code(text):
    found = rules.mentions(text)
    assert len(found) == len(set(found))
    assert all(h == h.lower() and "@" not in h for h in found)


def test_mentions_read_the_way_people_write_them():
    body = "@Bob, see `@not_me` and mail carol@example.com; cc @dave.smith.\n```\n@code\n```"
    assert rules.mentions(body) == ("bob", "dave.smith")
    assert rules.addresses("thanks @Quorum — why P0?")
    assert not rules.addresses("quorum@example.com says hi")


def test_an_edit_is_its_authors_and_only_within_the_window():
    now = timezone.now()
    assert rules.edit_refusal(author_id=1, editor_id=1, created_at=now, now=now) == ""
    assert "author" in rules.edit_refusal(author_id=1, editor_id=2, created_at=now, now=now)
    late = now + rules.EDIT_WINDOW + timedelta(seconds=1)
    assert "15 minutes" in rules.edit_refusal(author_id=1, editor_id=1, created_at=now, now=late)


def test_a_proposal_must_lower_the_priority_to_lower_it():
    lower = rules.Proposal(rules.ProposalKind.LOWER_PRIORITY, priority=rules.Priority.P2)
    assert rules.proposal_problem(lower, current=rules.Priority.P0) == ""
    assert "not lower" in rules.proposal_problem(lower, current=rules.Priority.P3)


# -- the service -----------------------------------------------------------------------------


@pytest.fixture
def finding(review_factory, stream_factory):
    review_round = review_factory()
    stream = stream_factory(review_round, "security")
    return node_record(stream=stream, payload=node_payload(), file_lines=FILES).node


def test_people_post_in_a_findings_thread_in_order_with_their_names(finding, user_factory):
    bob, carol = user_factory("bob@example.com"), user_factory("carol@example.com")
    thread = threads.thread_get(space=finding.space, key=f"node:{finding.pk}")
    first = threads.message_post(thread=thread, user=bob, body="  Why is this P1?  ")
    threads.message_post(
        thread=thread, user=carol, body="Because **tainted** input.", in_reply_to=first
    )
    rows = list(threads.thread_messages(space=finding.space, key=thread.key))
    assert [(m.author_label, m.body, m.source) for m in rows] == [
        ("bob@example.com", "Why is this P1?", "person"),
        ("carol@example.com", "Because **tainted** input.", "person"),
    ]
    assert rows[1].in_reply_to_id == first.pk and rows[1].node_id == finding.pk


def test_a_thread_of_another_space_or_nothing_is_not_found(finding, review_factory):
    other = review_factory()
    for space, key in ((other.space, f"node:{finding.pk}"), (finding.space, "note:999:0")):
        with pytest.raises(threads.ThreadRefused) as refused:
            threads.thread_get(space=space, key=key)
        assert refused.value.http_status == 404


def test_an_edit_keeps_the_earlier_text_and_shows(finding, user_factory):
    bob, carol = user_factory("bob@example.com"), user_factory("carol@example.com")
    thread = threads.thread_get(space=finding.space, key=f"node:{finding.pk}")
    message = threads.message_post(thread=thread, user=bob, body="It is P0.")
    with pytest.raises(threads.ThreadRefused):
        threads.message_edit(message=message, user=carol, body="vandalised")
    threads.message_edit(message=message, user=bob, body="It is P1.")
    message.refresh_from_db()
    assert message.body == "It is P1." and message.edited_at is not None
    assert list(ThreadMessageRevision.objects.values_list("body", flat=True)) == ["It is P0."]
    ThreadMessage.objects.filter(pk=message.pk).update(
        created_at=timezone.now() - rules.EDIT_WINDOW - timedelta(minutes=1)
    )
    message.refresh_from_db()
    with pytest.raises(threads.ThreadRefused, match="15 minutes"):
        threads.message_edit(message=message, user=bob, body="It is P3.")


def test_a_github_reply_is_stored_once_however_often_it_arrives(finding):
    thread = threads.thread_get(space=finding.space, key=f"node:{finding.pk}")
    stored = [
        threads.message_record_github(thread=thread, login="octo", body="Not a bug.", comment_id=77)
        for _ in range(3)
    ]
    assert [created for _, created in stored] == [True, False, False]
    assert ThreadMessage.objects.get().author_label == "octo on GitHub"


def test_the_mentioned_members_are_told_once(finding, member_factory, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    workspace = finding.space.workspace
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    member_factory(workspace, "viewer", "dave@example.com")
    thread = threads.thread_get(space=finding.space, key=f"node:{finding.pk}")
    message = threads.message_post(
        thread=thread, user=bob, body="@dave please look; @bob me too; @stranger?"
    )
    assert mentions_tell(message.pk) == 1
    assert mentions_tell(message.pk) == 0
    assert [m.bcc for m in mail.outbox] == [["dave@example.com"]]
    assert "Open the review" in mail.outbox[0].body
