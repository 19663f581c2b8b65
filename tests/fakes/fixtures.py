"""Pytest fixtures for the fakes. Import them into a conftest.py:

from tests.fakes.fixtures import fake_clock, fake_github, git_repo_factory  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.fakes.clock import FakeClock
from tests.fakes.github_server import FakeGitHub
from tests.fakes.gitrepo import GitRepo


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock tests move by hand; its `sleep` records waits instead of blocking."""
    return FakeClock()


@pytest.fixture
def fake_github(fake_clock: FakeClock) -> Iterator[FakeGitHub]:
    """A running fake GitHub on 127.0.0.1 that tells time with `fake_clock`."""
    fake = FakeGitHub(clock=fake_clock.time).start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def git_repo_factory(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., GitRepo]:
    """Builds empty repositories (branch `main`); script them with `repo.commit(...)`."""

    def make(name: str = "repo") -> GitRepo:
        return GitRepo.init(tmp_path_factory.mktemp(name) / name)

    return make


__all__ = ["fake_clock", "fake_github", "git_repo_factory"]
