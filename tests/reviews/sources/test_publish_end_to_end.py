"""Publishing through the client to the fake GitHub: plan → review, and the 422 fallback."""

from __future__ import annotations

import pytest

from reviews.sources.diffs import CommentableLines, parse_unified_diff
from reviews.sources.git_local import LocalGitSource
from reviews.sources.github_auth import StaticToken
from reviews.sources.github_client import GitHubClient, GitHubValidationError
from reviews.sources.publish_plan import (
    FOOTER,
    NodeRecord,
    build_publish_plan,
    fold_everything,
)

BASE = "".join(f"value_{i} = {i}\n" for i in range(1, 31))


@pytest.fixture
def published(fake_github, git_repo_factory, fake_clock):
    """PR #11 by bob in acme/app; the client acts as the app identity quorum[bot]."""
    repo = git_repo_factory()
    repo.commit("base", {"calc.py": BASE, "README.md": "hello\n"}, branch="main")
    changed = BASE.replace("value_5 = 5\n", "value_5 = 5 / 0\n").replace(
        "value_25 = 25\n", "value_25 = 25\nvalue_25b = None\n"
    )
    repo.commit("change", {"calc.py": changed}, branch="feature")
    fake_github.add_token("ghs_app", login="quorum[bot]")
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull("acme", "app", 11, base="main", head="feature", author="bob")
    client = GitHubClient(
        StaticToken("ghs_app"),
        base_url=fake_github.base_url,
        sleep=fake_clock.sleep,
        clock=fake_clock.time,
    )
    return fake_github, repo, client


def nodes():
    return [
        NodeRecord(
            id=1,
            status="consensus_ready",
            title="Division by zero",
            body="This raises at import time.",
            priority="P0",
            type="bug",
            path="calc.py",
            start_line=5,
            end_line=5,
            replacement_lines=["value_5 = 5"],
            reviewers=["ana", "ben"],
        ),
        NodeRecord(
            id=2,
            status="open",
            title="Unused value",
            body="Nothing reads value_25b.",
            priority="P2",
            type="suggestion",
            path="calc.py",
            start_line=24,
            end_line=26,
        ),
        NodeRecord(id=3, status="open", title="No tests", body="Add one.", priority="P1"),
        NodeRecord(id=4, status="dismissed", title="Noise", path="calc.py", start_line=5),
    ]


def test_it_posts_a_plan_built_from_githubs_diff_and_the_fake_records_it(published):
    """Anchors checked against the PR's current diff are all accepted (200) as planned."""
    fake, repo, client = published
    pull = client.get_pull("acme", "app", 11)
    files = parse_unified_diff(client.get_pull_diff("acme", "app", 11))
    plan = build_publish_plan(
        nodes=nodes(),
        verdict="Block",
        selection="all_open",
        approve_on_ship=True,
        commentable=CommentableLines.from_files(files),
    )
    assert plan.inline_ids == [1, 2] and plan.folded_ids == [3] and plan.skipped_ids == [4]

    review = client.create_review(
        "acme",
        "app",
        11,
        commit_id=pull["head"]["sha"],
        body=plan.body,
        event=plan.event,
        comments=plan.api_comments(),
    )
    assert review["state"] == "CHANGES_REQUESTED"
    assert review["user"]["login"] == "quorum[bot]"
    (recorded,) = fake.reviews("acme", "app", 11)
    assert recorded["commit_id"] == repo.sha("feature")
    assert recorded["body"] == plan.body and "No tests" in recorded["body"]
    assert recorded["comments"] == plan.api_comments()
    assert recorded["comments"][0]["body"].endswith(FOOTER)
    assert "```suggestion\nvalue_5 = 5\n```" in recorded["comments"][0]["body"]
    assert recorded["comments"][1]["start_line"] == 24


def test_it_falls_back_to_one_folded_review_when_github_rejects_an_anchor(published):
    """Anchors checked against a stale diff get a 422 with nothing created; the folded
    fallback is then accepted and carries every node."""
    fake, repo, client = published
    stale = LocalGitSource(repo.path).diff("main", "feature")
    # The author pushes again: line 5's change is reverted, so it leaves the diff.
    repo.commit("revert", {"calc.py": BASE + "value_31 = 31\n"}, branch="feature")
    plan = build_publish_plan(
        nodes=nodes(),
        verdict="Hold",
        selection="all_open",
        approve_on_ship=False,
        commentable=stale.commentable,
    )
    assert plan.inline_ids == [1, 2]
    head = client.get_pull("acme", "app", 11)["head"]["sha"]
    with pytest.raises(GitHubValidationError) as rejected:
        client.create_review(
            "acme",
            "app",
            11,
            commit_id=head,
            body=plan.body,
            event=plan.event,
            comments=plan.api_comments(),
        )
    assert "must be part of the diff" in rejected.value.errors[0]
    assert fake.reviews("acme", "app", 11) == []

    fallback = fold_everything(plan)
    review = client.create_review(
        "acme",
        "app",
        11,
        commit_id=head,
        body=fallback.body,
        event=fallback.event,
        comments=fallback.api_comments(),
    )
    assert review["state"] == "COMMENTED"
    (recorded,) = fake.reviews("acme", "app", 11)
    assert recorded["comments"] == []
    for title in ("Division by zero", "Unused value", "No tests"):
        assert recorded["body"].count(title) == 1
    assert "Noise" not in recorded["body"]
