"""A round's worktree is created once at the head SHA and removed when the space completes, when
a push supersedes its round, or when a newer round of the pull request finishes."""

from __future__ import annotations

import pytest

from reviews.domain.round_states import RoundState
from reviews.domain.space_status import ClosedReason
from reviews.services.rounds import round_cancel, round_start, round_transition
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


def _finished(review_round, capture):
    with capture(execute=True):
        round_transition(review_round, RoundState.RUNNING)
        round_transition(review_round, RoundState.FINISHED)


def _next_head(review_round, repo, capture, text: str):
    """A push after the round ended: a new round of a new head (nothing superseded)."""
    repo.commit(text, {"app.py": f"print({text!r})\n"}, branch="feature")
    with capture(execute=True):
        newer = round_start(space=review_round.space, head_sha=repo.sha("feature"), tier="light")
    return newer, round_worktree(review_round=newer)


def test_a_newer_round_finishing_releases_the_earlier_heads(
    local_round, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    first, repo = local_round
    first_path = round_worktree(review_round=first)
    _finished(first, capture)
    second, second_path = _next_head(first, repo, capture, "second")
    assert first_path.exists()  # the first head's verdict stands until the second's comes

    _finished(second, capture)

    assert not first_path.exists()
    assert (second_path / "app.py").read_text() == "print('second')\n"  # the verdict's head
    # A question on a finding of the first round checks its head out again.
    again = round_worktree(review_round=first)
    assert again == first_path and (again / "app.py").read_text() == "print(2)\n"


def test_an_earlier_head_stays_while_the_newer_round_has_no_verdict(
    local_round, django_capture_on_commit_callbacks, alice
):
    """A cancelled or failed newer round leaves the earlier round's verdict standing, and with
    it the checkout its thread questions read; an open one has not decided yet."""
    capture = django_capture_on_commit_callbacks
    first, repo = local_round
    first_path = round_worktree(review_round=first)
    _finished(first, capture)
    second, _ = _next_head(first, repo, capture, "second")
    with capture(execute=True):
        round_transition(second, RoundState.RUNNING)
    assert first_path.exists()
    with capture(execute=True):
        round_cancel(review_round=second, actor=alice)
    assert first_path.exists()
    third, _ = _next_head(first, repo, capture, "third")
    with capture(execute=True):
        round_transition(third, RoundState.RUNNING)
        round_transition(third, RoundState.FAILED, error="the prepare stage failed")
    assert first_path.exists()
