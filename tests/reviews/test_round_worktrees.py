"""A round's worktree is created once at the head SHA and removed when the space completes."""

from __future__ import annotations

import pytest

from reviews.domain.space_status import ClosedReason
from reviews.services.rounds import round_start
from reviews.services.spaces import pull_request_upsert, space_close, space_get_or_create
from reviews.services.worktrees import round_worktree
from workspaces.models import Repository


@pytest.fixture
def local_round(git_repo_factory, workspace, settings, tmp_path):
    repo = git_repo_factory()
    repo.commit("base", {"app.py": "print(1)\n"}, branch="main")
    repo.commit("feature", {"app.py": "print(2)\n"}, branch="feature")
    settings.QUORUM_LOCAL_REPO_ROOTS = [repo.path.parent]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(repo.path)
    )
    pr = pull_request_upsert(repository=repository, base_ref="main", head_ref="feature")
    space = space_get_or_create(pull_request=pr)
    return round_start(space=space, head_sha=repo.sha("feature"), tier="light"), repo


def test_it_checks_out_the_head_once_and_reuses_it(local_round, settings):
    review_round, _ = local_round
    path = round_worktree(review_round=review_round)
    assert (path / "app.py").read_text() == "print(2)\n"
    assert path.is_relative_to(settings.QUORUM_WORKTREE_ROOT)
    assert round_worktree(review_round=review_round) == path


def test_completing_the_space_removes_its_worktrees(
    local_round, django_capture_on_commit_callbacks
):
    review_round, _ = local_round
    path = round_worktree(review_round=review_round)
    space = review_round.space
    with django_capture_on_commit_callbacks(execute=True):
        space_close(space=space, reason=ClosedReason.MERGED)
    assert not path.exists()


def test_a_new_push_releases_the_superseded_round(local_round, django_capture_on_commit_callbacks):
    review_round, repo = local_round
    path = round_worktree(review_round=review_round)
    repo.commit("push", {"app.py": "print(3)\n"}, branch="feature")
    with django_capture_on_commit_callbacks(execute=True):
        round_start(space=review_round.space, head_sha=repo.sha("feature"), tier="light")
    assert not path.exists()
