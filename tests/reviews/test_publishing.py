"""Publishing one GitHub review per round, nothing dropped."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from guardrails.models import AuditEvent
from reviews.models import NodeConfirmation, PublishRecord, ReviewNode, ReviewRound
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm, node_dismiss
from reviews.services.publish_plans import PublishError
from reviews.services.publishing import publish_review
from reviews.services.rounds import round_start
from reviews.services.spaces import pull_request_upsert, space_get_or_create, space_status_refresh
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload
from workspaces.models import Repository

FOOTER = "— Quorum AI review"
BASE = "".join(f"line_{i} = {i}\n" for i in range(1, 61))


def _head_text() -> str:
    text = BASE.replace("line_5 = 5\n", "line_5 = 5 / 0\n")
    text = text.replace("line_20 = 20\n", "line_20 = eval(user_input)\n")
    return text.replace("line_40 = 40\n", "line_40 = 40  # TODO\n")


@pytest.fixture
def github(fake_github, git_repo_factory, settings):
    repo = git_repo_factory()
    repo.commit("base", {"calc.py": BASE}, branch="main")
    repo.commit("feature", {"calc.py": _head_text()}, branch="feature")
    fake_github.add_token("ghs_app", login="quorum[bot]")
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull(
        "acme", "app", 42, base="main", head="feature", author="bob", title="Add calc"
    )
    settings.GITHUB_API_URL = fake_github.base_url
    settings.GITHUB_TOKEN = "ghs_app"
    settings.GITHUB_APP_ID = ""
    return fake_github, repo


def _anchor(line, end=None):
    return {"path": "calc.py", "start_line": line, "end_line": end or line}


@pytest.fixture
def review(github, workspace, alice):
    """Six kinds of node on PR #42, then a push that moves line 40 out of the diff."""
    _, repo = github
    repository = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/app")
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
    lines = {"calc.py": 60}
    nodes = {
        "inline": node_record(
            stream=impl,
            payload=node_payload(
                title="Division by zero", priority="P0", confidence=0.9, anchor=_anchor(5)
            ),
            file_lines=lines,
        ).node,
        "moved": node_record(
            stream=impl,
            payload=node_payload(title="Leftover TODO", priority="P3", anchor=_anchor(40)),
            file_lines=lines,
        ).node,
        "unanchored": node_record(
            stream=impl,
            payload=node_payload(title="No tests for calc", priority="P2", anchor=None),
            file_lines=lines,
        ).node,
        "suggestion": node_record(
            stream=sec,
            payload=node_payload(
                title="eval on user input",
                anchor=_anchor(20),
                fix={"replacement_lines": ["line_20 = int(user_input)"]},
            ),
            file_lines=lines,
        ).node,
        "dismissed": node_record(
            stream=sec,
            payload=node_payload(title="Noise finding", priority="P2", anchor=_anchor(21)),
            file_lines=lines,
        ).node,
        "self_confirmed": node_record(
            stream=sec,
            payload=node_payload(title="Self praise", priority="P2", anchor=None),
            file_lines=lines,
        ).node,
    }
    node_confirm(node=nodes["inline"], by_agent="security")
    node_confirm(node=nodes["suggestion"], by_agent="implementation")
    node_dismiss(node=nodes["dismissed"], user=alice, reason="not real")
    # Written around the service, as a bug might: only the author itself "confirmed" it.
    NodeConfirmation.objects.create(node=nodes["self_confirmed"], agent="security", verdict="real")
    ReviewNode.objects.filter(pk=nodes["self_confirmed"].pk).update(status="consensus_ready")
    round_finalise(review_round=review_round)
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)
    # A new push restores line 40: its node's anchor is no longer in the PR's diff.
    repo.commit(
        "push",
        {"calc.py": _head_text().replace("line_40 = 40  # TODO\n", "line_40 = 40\n")},
        branch="feature",
    )
    return space, nodes


def _only_review(fake):
    reviews = fake.reviews("acme", "app", 42)
    assert len(reviews) == 1
    return reviews[0]


def test_all_open_publishes_one_review_with_nothing_lost(review, github, alice):
    fake, _ = github
    space, nodes = review
    record = publish_review(space=space, selection="all_open", approve_on_ship=True, actor=alice)

    assert record.state == "posted" and record.path == "inline"
    posted = _only_review(fake)
    assert posted["state"] == "CHANGES_REQUESTED"  # Block: P0 at 0.9
    comments = {c["line"]: c for c in posted["comments"]}
    assert set(comments) == {5, 20}
    assert "Division by zero" in comments[5]["body"]
    assert "```suggestion\nline_20 = int(user_input)\n```" in comments[20]["body"]
    assert all(FOOTER in c["body"] for c in posted["comments"])
    body = posted["body"]
    assert "No tests for calc" in body and "Self praise" in body
    assert "Leftover TODO" in body and "calc.py:40" in body
    assert "Noise finding" not in body and all("Noise" not in c["body"] for c in posted["comments"])
    assert FOOTER in body
    assert posted["commit_id"] == space.rounds.get().head_sha
    assert record.plan["inline"] == [nodes["inline"].pk, nodes["suggestion"].pk] or set(
        record.plan["inline"]
    ) == {nodes["inline"].pk, nodes["suggestion"].pk}
    assert {s["node"] for s in record.plan["skipped"]} == {nodes["dismissed"].pk}
    # The guardrails checkpoint records the one execution (by the app identity), not this call.
    assert not AuditEvent.objects.filter(action__endswith=".executed").exists()


def test_consensus_publishes_only_peer_confirmed_nodes(review, github, alice):
    fake, _ = github
    space, nodes = review
    record = publish_review(space=space, selection="consensus", approve_on_ship=False, actor=alice)
    posted = _only_review(fake)
    assert {c["line"] for c in posted["comments"]} == {5, 20}
    for absent in ("No tests for calc", "Self praise", "Leftover TODO", "Noise finding"):
        assert absent not in posted["body"]
    skipped = {s["node"]: s["reason"] for s in record.plan["skipped"]}
    assert skipped[nodes["self_confirmed"].pk] == "unconfirmed"
    assert skipped[nodes["unanchored"].pk] == "unconfirmed"


def test_a_refused_anchor_resubmits_everything_in_the_body(review, github, alice):
    fake, _ = github
    space, _ = review
    fake.rejected_anchors.add(("calc.py", 20))
    record = publish_review(space=space, selection="all_open", approve_on_ship=True, actor=alice)
    assert record.state == "posted" and record.path == "folded_fallback"
    posts = fake.requests_to("POST", r"/repos/acme/app/pulls/42/reviews")
    assert [p.status for p in posts] == [422, 200]
    posted = _only_review(fake)
    assert posted["comments"] == []
    for title in (
        "Division by zero",
        "eval on user input",
        "No tests for calc",
        "Self praise",
        "Leftover TODO",
    ):
        assert title in posted["body"]


def test_publishing_twice_posts_once(review, github, alice):
    fake, _ = github
    space, _ = review
    first = publish_review(space=space, selection="all_open", approve_on_ship=True, actor=alice)
    second = publish_review(space=space, selection="all_open", approve_on_ship=True, actor=alice)
    assert first.pk == second.pk and second.github_review_id == first.github_review_id
    _only_review(fake)


def test_it_refuses_to_publish_before_the_verdict_is_ready(github, workspace, alice):
    _, repo = github
    repository = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/app")
    pr = pull_request_upsert(repository=repository, number=42, base_ref="main", head_ref="feature")
    space = space_get_or_create(pull_request=pr)
    round_start(space=space, head_sha=repo.sha("feature"), tier="light")
    with pytest.raises(PublishError, match="has not started yet: wait for its verdict"):
        publish_review(space=space, selection="all_open", approve_on_ship=True, actor=alice)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_publishes_post_once(github, workspace_factory, user_factory):
    fake, repo = github
    owner = user_factory()
    ws = workspace_factory(owner=owner)
    repository = Repository.objects.create(workspace=ws, kind="github", full_name="acme/app")
    pr = pull_request_upsert(repository=repository, number=42, base_ref="main", head_ref="feature")
    space = space_get_or_create(pull_request=pr)
    review_round = round_start(space=space, head_sha=repo.sha("feature"), tier="light")
    stream = review_round.streams.create(name="implementation", agent="implementation")
    node_record(stream=stream, payload=node_payload(anchor=_anchor(5)), file_lines={"calc.py": 60})
    round_finalise(review_round=review_round)
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)

    barrier = threading.Barrier(8)
    results, errors = [], []

    def publish():
        try:
            barrier.wait()
            results.append(
                publish_review(
                    space=space, selection="all_open", approve_on_ship=True, actor=owner
                ).pk
            )
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=publish) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(results)) == 1
    assert len(fake.reviews("acme", "app", 42)) == 1
    assert PublishRecord.objects.get().state == "posted"
