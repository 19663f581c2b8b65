"""A pull request reviewed and awaiting approval on the fake GitHub (publishing tests)."""

from __future__ import annotations

import pytest

from reviews.models import ReviewRound
from reviews.services.node_recording import node_record
from reviews.services.rounds import round_start
from reviews.services.spaces import pull_request_upsert, space_get_or_create, space_status_refresh
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload, use_fake_github
from workspaces.models import Repository

BASE = "".join(f"v{i} = {i}\n" for i in range(1, 31))


@pytest.fixture
def publishable(fake_github, git_repo_factory, settings, workspace, alice, member_factory):
    """PR acme/app#5 reviewed and awaiting approval; bob requests, vera approves."""
    repo = git_repo_factory()
    repo.commit("base", {"calc.py": BASE}, branch="main")
    repo.commit("change", {"calc.py": BASE.replace("v3 = 3\n", "v3 = 3 / 0\n")}, branch="feature")
    use_fake_github(settings, fake_github)
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull("acme", "app", 5, base="main", head="feature", author="dev")
    repository = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/app")
    pr = pull_request_upsert(
        repository=repository,
        number=5,
        base_ref="main",
        head_ref="feature",
        head_sha=repo.sha("feature"),
    )
    space = space_get_or_create(pull_request=pr)
    review_round = round_start(space=space, head_sha=repo.sha("feature"), tier="light")
    stream = review_round.streams.create(name="implementation", agent="implementation")
    node_record(
        stream=stream,
        payload=node_payload(anchor={"path": "calc.py", "start_line": 3, "end_line": 3}),
        file_lines={"calc.py": 30},
    )
    round_finalise(review_round=review_round)
    # The pipeline ran to its end (as it would have): a worker's sweeper must not resume it.
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    vera = member_factory(workspace, "approver", "vera@example.com")
    return space, review_round, bob, vera
