"""Two rounds, then a person: a pull request whose rounds keep ending without approval is
flagged for a person, through the real pipeline (offline analyzers, faithful fake GitHub)."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from config.asgi import application
from guardrails.models import AuditEvent
from reviews.models import ReviewNode, ReviewRound, ReviewSpace
from reviews.pipeline.runner import run_inline
from reviews.services.flags import space_flag_check, space_flag_clear
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_reopen, node_resolve
from reviews.services.requests import review_request
from reviews.services.rounds import round_start
from reviews.services.spaces import pull_request_upsert, space_get_or_create, space_status_refresh
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload, use_fake_github
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

# bandit B307 (eval) alone is an unconfirmed analyzer P1: the verdict is Hold, which GitHub
# receives as CHANGES_REQUESTED.
EVAL = "def run(text):\n    return eval(text)\n"


@pytest.fixture
def pull(fake_github, git_repo_factory, settings, workspace, alice, tmp_path):
    """PR acme/app#7 on the fake GitHub; `push(files)` commits to its branch and reviews the new
    head to its end, as a push would."""
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    use_fake_github(settings, fake_github)
    repo = git_repo_factory()
    repo.commit("base", {"app.py": "x = 1\n"}, branch="main")
    repo.commit("first try", {"calc.py": EVAL}, branch="feature")
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull("acme", "app", 7, base="main", head="feature", author="dev")
    repository = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/app")

    def push(files: dict[str, str] | None = None) -> ReviewRound:
        if files:
            repo.commit("another try", files, branch="feature")
        review_round = review_request(repository=repository, actor=alice, number=7, queue=False)
        finished = run_inline(review_round.pk)
        assert finished.state == "finished", finished.error
        return finished

    return push


def _space() -> ReviewSpace:
    return ReviewSpace.objects.get()


def _flag_events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("seq"))


def test_two_rounds_ending_in_changes_requested_flag_the_review_until_a_person_clears_it(
    pull, workspace, client_for, member_factory
):
    first = pull()
    assert first.verdict.level == "hold"
    assert not _space().flagged_for_human  # one round without approval is normal

    second = pull({"calc.py": EVAL + "\n\ndef twice(text):\n    return eval(text) * 2\n"})
    assert second.number == 2 and second.verdict.level == "hold"
    space = _space()
    assert space.flagged_for_human and space.flagged_at is not None
    assert "round 1: changes requested (Hold); round 2: changes requested (Hold)" in (
        space.flag_reason
    )
    [flagged] = _flag_events("review.flagged_for_human")
    assert flagged.actor_kind == "system" and flagged.target_id == str(space.pk)
    assert [r["verdict"] for r in flagged.payload["rounds"]] == ["hold", "hold"]

    # People see it: a banner on the review, a filter on the list, the JSON and the API.
    viewer = member_factory(workspace, "viewer", "val@example.com")
    reader = client_for(viewer)
    page = reader.get(f"/w/{workspace.slug}/reviews/{space.pk}/").content.decode()
    assert 'id="flag-banner"' in page and "Needs a person." in page
    assert "round 2: changes requested (Hold)" in page
    assert "I have looked: clear the flag" not in page  # a viewer cannot clear it
    listed = reader.get(f"/w/{workspace.slug}/reviews/?flagged=1").content.decode()
    assert f"space-row-{space.pk}" in listed and "Needs a person" in listed
    export = reader.get(f"/w/{workspace.slug}/reviews/{space.pk}/report.json").json()
    assert export["space"]["flagged_for_human"] is True
    assert "round 2" in export["space"]["flag"]["reason"]
    api = reader.get(f"/api/v1/workspaces/{workspace.slug}/reviews?flagged=true").json()
    assert [(r["id"], r["flagged_for_human"]) for r in api] == [(space.pk, True)]

    # A third push is still reviewed; the flag stays, and is not raised twice.
    third = pull({"calc.py": EVAL + "\n# still thinking\n"})
    assert third.number == 3 and third.state == "finished"
    assert _space().flagged_for_human
    assert len(_flag_events("review.flagged_for_human")) == 1

    # Only a reviewer (or higher) clears it, and the audit says who.
    refused = reader.post(f"/w/{workspace.slug}/reviews/{space.pk}/flag/clear/", {"note": "x"})
    assert refused.status_code == 403 and _space().flagged_for_human
    rita = member_factory(workspace, "reviewer", "rita@example.com")
    cleared = client_for(rita).post(
        f"/w/{workspace.slug}/reviews/{space.pk}/flag/clear/",
        {"note": "Talked to the author: eval goes next push"},
        follow=True,
    )
    assert "Flag cleared" in cleared.content.decode()
    assert 'id="flag-banner"' not in cleared.content.decode()
    space = _space()
    assert not space.flagged_for_human and space.flag_reason == ""
    [event] = _flag_events("review.flag_cleared")
    assert event.actor_label == "rita@example.com" and event.actor_id == rita.pk
    assert event.payload["round"] == 3
    assert event.payload["note"] == "Talked to the author: eval goes next push"
    assert "round 2" in event.payload["reason"]
    audit = client_for(rita).get(f"/w/{workspace.slug}/audit/").content.decode()
    assert "review.flag_cleared" in audit and "rita@example.com" in audit

    # Clearing it again says there is nothing to clear; the rounds seen do not count again.
    again = client_for(rita).post(
        f"/w/{workspace.slug}/reviews/{space.pk}/flag/clear/", {}, follow=True
    )
    assert "not flagged for a person" in again.content.decode()
    fourth = pull({"calc.py": EVAL + "\n# one more\n"})
    assert fourth.verdict.level == "hold" and not _space().flagged_for_human


def test_an_approval_in_between_breaks_the_run(pull):
    assert pull().verdict.level == "hold"
    fixed = pull({"calc.py": "def run(text):\n    return int(text)\n"})
    assert fixed.verdict.level == "ship"
    assert pull({"calc.py": EVAL}).verdict.level == "hold"
    assert not _space().flagged_for_human
    assert not AuditEvent.objects.filter(action="review.flagged_for_human").exists()


@pytest.fixture
def unpipelined(workspace, alice):
    """A PR whose rounds are written by the services directly (no pipeline)."""
    workspace.gated_axes = []  # no axis was computed: the findings alone decide
    workspace.save(update_fields=["gated_axes"])
    repository = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/x")
    pr = pull_request_upsert(repository=repository, number=3, base_ref="main", head_ref="f")
    space = space_get_or_create(pull_request=pr)

    def finished_round(head: str, priority: str | None) -> ReviewRound:
        review_round = round_start(space=space, head_sha=head * 40, tier="thorough")
        if priority:
            stream = review_round.streams.create(name="implementation", agent="implementation")
            node_record(
                stream=stream,
                payload=node_payload(priority=priority, confidence=0.9, anchor=None),
                file_lines={},
            )
        round_finalise(review_round=review_round)
        ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
        space_status_refresh(space=space)
        return review_round

    return space, finished_round


def test_a_decision_that_turns_the_second_round_into_a_hold_flags_it(unpipelined, alice):
    """The verdict follows decisions: a reopened finding can make round 2 the second in a row
    without approval."""
    space, finished_round = unpipelined
    assert _level(finished_round("a", "P1")) == "hold"
    second = finished_round("b", "P1")
    node = ReviewNode.objects.get(round=second)
    node_resolve(node=node, user=alice, reason="fixed in this push")
    assert _level(second) == "ship"
    space.refresh_from_db()
    assert not space.flagged_for_human
    node_reopen(node=ReviewNode.objects.get(pk=node.pk), user=alice, reason="it is not")
    assert _level(second) == "hold"
    space.refresh_from_db()
    assert space.flagged_for_human


def _level(review_round: ReviewRound) -> str:
    return ReviewRound.objects.get(pk=review_round.pk).verdict.level


def test_an_open_review_page_shows_the_flag_and_its_clearing_live(unpipelined, alice):
    space, finished_round = unpipelined
    finished_round("a", "P1")
    finished_round("b", "P1")  # written around the pipeline: nothing checked the flag yet
    client = Client()
    client.force_login(alice)
    headers = [
        (b"origin", b"http://127.0.0.1:8000"),
        (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
    ]

    async def scenario():
        comm = WebsocketCommunicator(application, f"/ws/reviews/{space.pk}/", headers=headers)
        connected, _ = await comm.connect()
        assert connected
        first = await comm.receive_from(timeout=5)
        assert 'id="flag-banner"' not in first
        assert await database_sync_to_async(space_flag_check)(space=space.pk)
        flagged = await comm.receive_from(timeout=5)
        await database_sync_to_async(space_flag_clear)(space=space, actor=alice, note="seen")
        cleared = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return flagged, cleared

    flagged, cleared = asyncio.run(scenario())
    assert 'id="review-header"' in flagged and 'id="flag-banner"' in flagged
    assert "I have looked: clear the flag" in flagged
    assert 'id="review-header"' in cleared and 'id="flag-banner"' not in cleared
