"""Rounds people can navigate, cancel (with a confirmation) and re-run, through the real
pipeline with the offline analyzers (no model configured)."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from guardrails.models import AuditEvent
from reviews.models import ReviewNode, ReviewRound, ReviewSpace
from reviews.services.rounds import RoundError, round_cancel, round_rerun, round_transition
from reviews.sources.sample_repo import create_sample_repository
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

TERMINAL = ("finished", "failed", "cancelled", "superseded")


@pytest.fixture
def embedded(settings, tmp_path):
    """No model (the analyzers review) and no broker: a started round runs in the server's
    background threads, exactly as the embedded default's start button runs it."""
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    settings.REDIS_URL = ""
    path = tmp_path / "shop"
    base, head = create_sample_repository(path)
    settings.QUORUM_LOCAL_REPO_ROOTS = [path.parent]
    return path, base, head


@pytest.fixture
def repo(embedded, workspace):
    path, _, _ = embedded
    return Repository.objects.create(workspace=workspace, kind="local", local_path=str(path))


def _wait(round_id: int, timeout: float = 120) -> ReviewRound:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        review_round = ReviewRound.objects.get(pk=round_id)
        if review_round.state in TERMINAL:
            return review_round
        time.sleep(0.2)
    raise AssertionError(f"round {round_id} still {review_round.state} after {timeout}s")


def _start(client, workspace, repo, base, head):
    response = client.post(
        f"/w/{workspace.slug}/reviews/",
        {"repository": repo.pk, "base": base, "head": head},
    )
    assert response.status_code == 302, response.content.decode()[:500]
    return ReviewRound.objects.order_by("-pk").first()


def test_cancel_and_rerun_keep_the_last_verdict_and_say_same_head(
    embedded, repo, workspace, alice, member_factory, client_for
):
    """Must show: after cancel the last finished round is readable and the state says
    cancelled; re-run produces a new round on the same head whose delta says "same head"."""
    from reviews.services.requests import review_request

    _, base, head = embedded
    reviewer = member_factory(workspace, "reviewer", "rita@example.com")
    viewer = member_factory(workspace, "viewer", "vic@example.com")
    client = client_for(reviewer)

    # Round 1 runs to a verdict with nothing but the start button.
    first = _wait(_start(client, workspace, repo, base, head).pk)
    assert first.state == "finished"
    space = ReviewSpace.objects.get()
    titles = set(
        ReviewNode.objects.filter(round=first, duplicate_of__isnull=True).values_list(
            "title", flat=True
        )
    )
    assert titles
    page_url = f"/w/{workspace.slug}/reviews/{space.pk}/"

    # Round 2 (queued, same head) is cancelled: a bare POST only asks for confirmation.
    second = review_request(repository=repo, actor=reviewer, base=base, head=head, queue=False)
    assert second.number == 2 and second.state == "pending"
    html = client.get(page_url).content.decode()
    assert "Cancel round 2…" in html and "Re-run" not in html
    asked = client.post(f"{page_url}cancel/", {"round": 2})
    assert asked.status_code == 200
    body = asked.content.decode()
    assert "Nothing has been done yet" in body and 'name="confirm" value="yes"' in body
    assert ">Cancel round 2</button>" in body and ">Keep it running</a>" in body
    assert "The verdict and findings of round 1 stay readable" in body
    second.refresh_from_db()
    assert second.state == "pending"
    assert client.post(f"{page_url}cancel/", {"round": 2, "confirm": "yes"}).status_code == 302
    second.refresh_from_db()
    assert second.state == "cancelled" and second.finished_at is not None
    assert AuditEvent.objects.filter(action="review.cancelled").count() == 1

    html = client.get(page_url).content.decode()
    assert '<strong id="space-status">Round cancelled</strong>' in html
    assert "Round 2 was cancelled" in html and "the last finished round" in html
    assert all(title in html for title in titles)  # round 1's findings, still readable
    assert 'id="round-switcher"' in html and "Round 2</a> · Cancelled" in html
    assert "Re-run round 2 on the same head" in html

    # A viewer may not re-run; a reviewer may.
    viewer_client = Client()
    viewer_client.force_login(viewer)
    assert "Re-run round 2" not in viewer_client.get(page_url).content.decode()
    assert viewer_client.post(f"{page_url}rerun/", {"round": 2}).status_code == 403
    assert ReviewRound.objects.count() == 2
    response = client.post(f"{page_url}rerun/", {"round": 2})
    assert response.status_code == 302
    third = ReviewRound.objects.get(number=3)
    assert (third.head_sha, third.rerun_of_id) == (second.head_sha, second.pk)
    third = _wait(third.pk)  # queued like the start button: it runs by itself
    assert third.state == "finished"
    assert AuditEvent.objects.get(action="review.rerun").payload["new_round"] == 3

    html = client.get(page_url).content.decode()
    assert '<strong id="round-state">Finished</strong> (re-run of round 2)' in html
    assert '<span id="round-delta">same head as round 1</span>' in html
    assert "0 new" not in html and "still open" not in html  # no delta against itself
    # The switcher reads any round: round 1's findings and verdict, and the cancelled one.
    one = client.get(f"{page_url}?round=1").content.decode()
    assert all(title in one for title in titles) and 'aria-current="page"' in one
    cancelled = client.get(f"{page_url}?round=2").content.decode()
    assert '<strong id="round-state">Cancelled</strong>' in cancelled
    assert f"Cancelled by {reviewer.email}" in cancelled
    assert client.get(f"{page_url}?round=9").status_code == 404
    assert client.get(f"{page_url}?round=x").status_code == 400

    report = client.get(f"{page_url}report.md").content.decode()
    assert "**Round:** 3 of 3 (finished, re-run of round 2)" in report
    assert "same head as round 1" in report
    api = f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}"
    data = client.get(api).json()
    assert data["round"]["number"] == 3 and data["round"]["rerun_of"] == 2
    assert data["round"]["delta"]["same_head_as"] == 1
    assert data["round"]["delta"]["baseline"] is None
    assert [(r["number"], r["state_label"]) for r in data["rounds"]] == [
        (1, "Finished"),
        (2, "Cancelled"),
        (3, "Finished"),
    ]
    rounds = client.get(f"{api}/rounds").json()
    assert [r["rerun_of"] for r in rounds] == [None, None, 2]
    assert json.dumps(rounds)  # plain JSON


def test_the_finishing_pipeline_never_overwrites_a_cancel(review_factory, alice):
    review_round = review_factory()
    assert round_transition(review_round, "running")
    assert round_transition(review_round, "running")  # the next stage: stays running
    round_cancel(review_round=review_round, actor=alice)
    assert not round_transition(review_round, "finished")
    assert not round_transition(review_round, "failed", error="late failure")
    review_round.refresh_from_db()
    assert (review_round.state, review_round.error) == ("cancelled", f"Cancelled by {alice.email}.")
    review_round.space.refresh_from_db()
    assert review_round.space.status == "cancelled"
    with pytest.raises(RoundError, match="is cancelled: nothing to cancel"):
        round_cancel(review_round=review_round, actor=alice)


def test_rerun_refuses_what_it_cannot_rerun(review_factory, alice, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # never reached: refused before queueing
    review_round = review_factory()
    with pytest.raises(RoundError, match="only a failed or cancelled round is re-run"):
        round_rerun(review_round=review_round, actor=alice)
    round_transition(review_round, "running")
    round_transition(review_round, "failed", error="The prepare stage failed: boom")
    review_round.space.refresh_from_db()
    assert review_round.space.status == "failed"
    from reviews.services.rounds import round_start

    later = round_start(space=review_round.space, head_sha="c" * 40, tier="light")
    with pytest.raises(RoundError, match="not the newest round: round 2"):
        round_rerun(review_round=review_round, actor=alice)
    assert ReviewRound.objects.filter(pk=later.pk, rerun_of__isnull=True).exists()
    round_cancel(review_round=later, actor=alice)
    from reviews.domain.space_status import ClosedReason
    from reviews.services.spaces import space_close

    space_close(space=later.space, reason=ClosedReason.MERGED)
    later.refresh_from_db()
    with pytest.raises(RoundError, match="was merged: there is nothing to review again"):
        round_rerun(review_round=later, actor=alice)


def test_the_api_lists_rounds_reruns_and_cancels_with_confirmation(
    review_factory, workspace, alice, member_factory, client_for
):
    review_round = review_factory(workspace)
    space = review_round.space
    api = f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/rounds"
    client = client_for(alice)
    listed = client.get(api).json()
    assert [(r["number"], r["state"], r["state_label"]) for r in listed] == [
        (1, "pending", "Queued")
    ]
    bare = client.post(f"{api}/1/cancel")
    assert bare.status_code == 409 and "confirm=yes" in bare.json()["detail"]
    assert ReviewRound.objects.get(pk=review_round.pk).state == "pending"
    viewer = Client()
    viewer.force_login(member_factory(workspace, "viewer", "v@example.com"))
    assert viewer.post(f"{api}/1/cancel?confirm=yes").status_code == 403
    assert viewer.post(f"{api}/1/rerun").status_code == 403
    done = client.post(f"{api}/1/cancel?confirm=yes")
    assert done.status_code == 200 and done.json()["state"] == "cancelled"
    assert client.post(f"{api}/1/cancel?confirm=yes").status_code == 409
    assert client.post(f"{api}/7/rerun").status_code == 404


def test_the_list_and_page_say_states_in_words(review_factory, workspace, alice, client_for):
    review_round = review_factory(workspace)
    client = client_for(alice)
    listing = client.get(f"/w/{workspace.slug}/reviews/").content.decode()
    assert ">Queued</span>" in listing and "Round queued" in listing
    assert ">Awaiting approval</option>" in listing  # the filter offers words too
    assert ">in_progress<" not in listing and ">pending<" not in listing
    round_transition(review_round, "running")
    listing = client.get(f"/w/{workspace.slug}/reviews/").content.decode()
    assert ">Reviewing</span>" in listing and "Round running" in listing
    page = client.get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/").content.decode()
    assert '<strong id="round-state">Running</strong>' in page
    assert '<strong id="space-status">Reviewing</strong>' in page


def test_a_page_pinned_to_an_earlier_round_stays_on_it_live_and_acts_on_it(
    review_factory, stream_factory, workspace, alice, client_for
):
    """?round=1 while round 2 runs: the socket keeps sending round 1's sections, and a finding
    of round 1 is triaged with HTMX and comes back as its card."""
    import asyncio

    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator

    from config.asgi import application
    from reviews.services.node_recording import node_record
    from reviews.services.nodes import node_resolve
    from reviews.services.rounds import round_start
    from tests.fixtures import node_payload

    first = review_factory(workspace)
    node = node_record(
        stream=stream_factory(first, "implementation"), payload=node_payload(title="Round one bug")
    ).node
    round_transition(first, "running")
    round_transition(first, "finished")
    second = round_start(space=first.space, head_sha="c" * 40, tier="light")
    round_transition(second, "running")
    client = client_for(alice)
    url = f"/w/{workspace.slug}/reviews/{first.space_id}/"
    newest = client.get(url).content.decode()  # the running round: round 1's bug is gone
    assert f'id="node-{node.pk}"' not in newest and "Gone since round 1" in newest
    pinned = client.get(f"{url}?round=1").content.decode()
    assert "Round one bug" in pinned and "/ws/reviews/" in pinned and "?round=1" in pinned
    session = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())

    async def scenario():
        comm = WebsocketCommunicator(
            application,
            f"/ws/reviews/{first.space_id}/?round=1",
            headers=[(b"origin", b"http://127.0.0.1:8000"), session],
        )
        connected, _ = await comm.connect()
        assert connected
        page = await comm.receive_from(timeout=5)
        await database_sync_to_async(node_resolve)(node=node, user=alice, reason="fixed")
        update = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return page, update

    page, update = asyncio.run(scenario())
    assert f'id="node-{node.pk}"' in page and '<strong id="round-state">Finished</strong>' in page
    assert 'id="review-header"' in update and "Showing round 1, an earlier round" in update
    assert '<strong id="round-state">Finished</strong>' in update  # still round 1's header
    assert f'id="node-{node.pk}"' in update and "node-resolved" in update
    response = client.post(f"{url}nodes/{node.pk}/", {"action": "reopen"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and f'id="node-{node.pk}"' in response.content.decode()
