"""The report and the discussion: by default a count under each finding and note that has a
thread; asked for (?discussion=1, the report page's checkbox), every message quoted under what
it discusses, marked from GitHub / posted on GitHub / edited, and never passing for a section."""

from __future__ import annotations

import pytest

from reviews.models import ReviewerStream
from reviews.services import threads
from reviews.services.node_recording import node_record
from tests.fixtures import node_payload

FILES = {"app/views.py": 40}


@pytest.fixture
def discussed(review_factory, stream_factory, workspace, member_factory):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "security")
    ReviewerStream.objects.filter(pk=stream.pk).update(
        notes=[{"kind": "comment", "body": "Cache the lookup.", "path": "app/views.py", "line": 3}]
    )
    node = node_record(
        stream=stream, payload=node_payload(title="Tainted query"), file_lines=FILES
    ).node
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    thread = threads.thread_get(space=node.space, key=f"node:{node.pk}")
    question = threads.message_post(thread=thread, user=bob, body="Reachable?")
    threads.message_edit(message=question, user=bob, body="Reachable from /search?")
    threads.message_record_github(
        thread=thread,
        login="octo",
        body="Yes.\n## Planted section\n```\ncode\n```",
        comment_id=7,
        in_reply_to=question,
    )
    note = threads.thread_get(space=node.space, key=f"note:{stream.pk}:0")
    threads.message_post(thread=note, user=bob, body="Agreed, later.")
    return node, bob


def _report(client, node, query=""):
    space = node.space
    url = f"/w/{space.workspace.slug}/reviews/{space.pk}/report.md{query}"
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def _after(report: str, marker: str) -> str:
    return report[report.index(marker) :]


def test_by_default_each_thread_is_a_count_under_what_it_discusses(discussed, client_for):
    node, bob = discussed
    report = _report(client_for(bob), node)
    finding = _after(report, "**Tainted query**")
    assert finding.index("Discussion: 2 messages (1 from GitHub).") < finding.index("## ")
    notes = _after(report, "## Notes from reviewers")
    assert "Comment from security" in notes and "Discussion: 1 message." in notes
    assert "Reachable" not in report and "Planted" not in report


def test_the_discussion_quotes_every_message_marked(discussed, client_for):
    node, bob = discussed
    report = _report(client_for(bob), node, "?discussion=1")
    finding = _after(report, "**Tainted query**")
    finding = finding[: finding.index("\n## ")]
    assert "  - bob@example.com (" in finding and ", edited):" in finding
    assert "    > Reachable from /search?" in finding
    assert "  - octo on GitHub (" in finding and ", from GitHub):" in finding
    # A message's heading stays inside its quote: the report's sections are the report's.
    assert "    > ## Planted section" in finding
    assert not any(line.startswith("## Planted") for line in report.splitlines())
    notes = _after(report, "## Notes from reviewers")
    assert "    > Agreed, later." in notes


def test_the_report_page_offers_the_discussion(discussed, client_for):
    node, bob = discussed
    space = node.space
    base = f"/w/{space.workspace.slug}/reviews/{space.pk}/"
    client = client_for(bob)
    plain = client.get(f"{base}report/").content.decode()
    assert 'name="discussion"' in plain and "Include the discussion" in plain
    assert "Reachable from /search?" not in plain
    full = client.get(f"{base}report/?discussion=1").content.decode()
    assert "Reachable from /search?" in full
    assert f'href="{base}report.md?download=1&amp;discussion=1"' in full
