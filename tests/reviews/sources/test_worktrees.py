"""Worktrees: one checkout per (space, round), reused, cleaned; paths never leave the root."""

from __future__ import annotations

import os

import pytest

from reviews.sources.gitcmd import GitError
from reviews.sources.github_auth import StaticToken
from reviews.sources.github_client import GitHubClient
from reviews.sources.worktrees import UnsafePath, WorktreeManager, safe_join, unread_files


@pytest.fixture
def repo(git_repo_factory):
    repo = git_repo_factory()
    repo.commit("one", {"app.py": "print(1)\n"}, branch="main")
    repo.commit("two", {"app.py": "print(2)\n", "lib/util.py": "X = 1\n"}, branch="feature")
    return repo


def test_it_creates_a_detached_checkout_once_and_reuses_it(tmp_path, repo):
    """The second call returns the same directory without recreating it."""
    manager = WorktreeManager(tmp_path / "worktrees")
    sha = repo.sha("feature")
    path = manager.ensure_local(12, 3, repo=repo.path, sha=sha)
    assert path == (tmp_path / "worktrees" / "12" / "3").resolve()
    assert (path / "lib" / "util.py").read_text() == "X = 1\n"
    assert repo.git("-C", str(path), "rev-parse", "HEAD").strip() == sha
    (path / "scratch.txt").write_text("left by an earlier call")
    assert manager.ensure_local(12, 3, repo=repo.path, sha=sha) == path
    assert (path / "scratch.txt").exists(), "an existing checkout must be reused, not rebuilt"


def test_it_replaces_a_checkout_of_another_commit(tmp_path, repo):
    """If the directory holds a different commit, it is rebuilt at the requested one."""
    manager = WorktreeManager(tmp_path / "wt")
    path = manager.ensure_local(1, 1, repo=repo.path, sha=repo.sha("main"))
    manager.ensure_local(1, 1, repo=repo.path, sha=repo.sha("feature"))
    assert (path / "app.py").read_text() == "print(2)\n"


def test_it_never_registers_the_checkout_in_the_source_repository(tmp_path, repo):
    """The source's `git worktree list` and `.git` stay as they were; cleanup removes the
    directory, and twice is harmless."""
    before = repo.git("worktree", "list", "--porcelain")
    manager = WorktreeManager(tmp_path / "wt")
    path = manager.ensure_local("space-a", 1, repo=repo.path, sha=repo.sha("feature"))
    assert repo.git("worktree", "list", "--porcelain") == before
    assert not (repo.path / ".git" / "worktrees").exists()
    assert repo.git("-C", str(path), "status", "--porcelain") == ""
    manager.cleanup("space-a", 1)
    assert not path.exists()
    manager.cleanup("space-a", 1)  # idempotent


def test_a_file_whose_content_is_missing_is_listed_as_unread(tmp_path, repo):
    """A blob the source lacks leaves the other files checked out and is named in the
    checkout's unread list, instead of failing the checkout."""
    sha = repo.sha("feature")
    blob = repo.git("rev-parse", f"{sha}:lib/util.py").strip()
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # a fresh repo: loose
    manager = WorktreeManager(tmp_path / "wt")
    path = manager.ensure_local(2, 1, repo=repo.path, sha=sha)
    assert (path / "app.py").read_text() == "print(2)\n"
    assert not (path / "lib" / "util.py").exists()
    assert unread_files(path) == ["lib/util.py"]


def test_it_fetches_a_remote_commit_with_a_header_token_never_saved(tmp_path, repo, fake_github):
    """A GitHub checkout is fetched over smart HTTP with the token in a header; the token
    appears nowhere in the checkout's git directory."""
    fake_github.add_token("ghp_secret_token_1", login="quorum")
    fake_github.add_repo("acme", "app", repo.path)
    client = GitHubClient(StaticToken("ghp_secret_token_1"), base_url=fake_github.base_url)
    remote = client.git_remote("acme", "app")
    manager = WorktreeManager(tmp_path / "wt")
    sha = repo.sha("feature")
    path = manager.ensure_remote(7, 1, url=remote.url, sha=sha, auth_header=remote.auth_header)
    assert (path / "lib" / "util.py").exists()
    assert repo.git("-C", str(path), "rev-parse", "HEAD").strip() == sha
    for folder, _, files in os.walk(path / ".git"):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                assert b"ghp_secret_token_1" not in handle.read(), name
    assert remote.auth_header not in repr(remote)
    # Reused: no second fetch.
    fetches = len(fake_github.requests)
    assert manager.ensure_remote(7, 1, url=remote.url, sha=sha, auth_header=remote.auth_header)
    assert len(fake_github.requests) == fetches


def test_it_fails_a_remote_fetch_with_a_bad_token_without_leaving_a_checkout(
    tmp_path, repo, fake_github
):
    """A refused token is a non-retryable GitError and no directory is left behind."""
    fake_github.add_repo("acme", "app", repo.path)
    manager = WorktreeManager(tmp_path / "wt")
    url = f"{fake_github.base_url}/acme/app.git"
    with pytest.raises(GitError) as caught:
        manager.ensure_remote(
            7, 1, url=url, sha=repo.sha("feature"), auth_header="Authorization: Basic eDp5"
        )
    assert caught.value.retryable is False
    assert not (tmp_path / "wt" / "7" / "1").exists()
    with pytest.raises(UnsafePath):
        manager.ensure_remote(7, 1, url="https://user:pw@example.com/a.git", sha="a" * 40)


@pytest.mark.parametrize("space_id", ["../x", "a/b", "", ".hidden", -1, True, "x" * 65])
def test_it_refuses_unsafe_space_ids(tmp_path, space_id):
    """Ids that could name another directory are refused before any filesystem call."""
    with pytest.raises(UnsafePath):
        WorktreeManager(tmp_path).path_for(space_id, 1)


@pytest.mark.parametrize("round_number", [-1, "1", True, 1.5])
def test_it_refuses_unsafe_round_numbers(tmp_path, round_number):
    """A round must be a non-negative int."""
    with pytest.raises(UnsafePath):
        WorktreeManager(tmp_path).path_for(1, round_number)


def test_it_joins_paths_inside_the_root(tmp_path):
    """Ordinary relative paths, existing or not, resolve inside the root."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    assert safe_join(tmp_path, "src/a.py") == (tmp_path / "src" / "a.py").resolve()
    assert safe_join(tmp_path, "src/../src/new.py") == (tmp_path / "src" / "new.py").resolve()
    assert safe_join(tmp_path, ".") == tmp_path.resolve()


@pytest.mark.parametrize(
    "relative", ["../../etc/passwd", "/etc/passwd", "src/../../outside", "..", "a\x00b", "~/x"]
)
def test_it_refuses_paths_escaping_the_root(tmp_path, relative):
    """Traversal, absolute paths and NUL bytes are refused."""
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(UnsafePath):
        safe_join(root, relative)


def test_it_refuses_a_symlink_pointing_outside(tmp_path):
    """A symlink inside the root that leads outside it is refused; one staying inside is not."""
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("secret")
    (root / "pkg" / "link").symlink_to(tmp_path / "secret.txt")
    (root / "pkg" / "dirlink").symlink_to(tmp_path)
    (root / "pkg" / "ok").symlink_to(root / "pkg")
    with pytest.raises(UnsafePath):
        safe_join(root, "pkg/link")
    with pytest.raises(UnsafePath):
        safe_join(root, "pkg/dirlink/secret.txt")
    assert safe_join(root, "pkg/ok") == (root / "pkg").resolve()


def test_it_refuses_a_root_prefix_sibling(tmp_path):
    """`/x/root-evil` is not inside `/x/root` even though it shares the prefix."""
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "root-evil").mkdir()
    with pytest.raises(UnsafePath):
        safe_join(root, "../root-evil/file")


def test_it_fetches_the_base_and_deepens_until_the_merge_base_is_there(
    tmp_path, fake_github, git_repo_factory
):
    """A pull request's base is fetched into the round's checkout and both histories are
    deepened until their merge base is found — here 60 commits back on the feature branch,
    beyond the first deepening, while the base branch moved on after the branch point. The
    checked-out files stay at the head and the token stays out of the git directory."""
    repo = git_repo_factory("deep")
    fork = repo.commit("base", {"app.py": "print(1)\n"}, branch="main")
    for i in range(60):
        repo.commit(f"feature {i}", {"app.py": f"print({i})\n"}, branch="feature")
    repo.commit("main moves on", {"other.py": "X = 2\n"}, branch="main")
    fake_github.add_token("ghp_secret_token_2", login="quorum")
    fake_github.add_repo("acme", "deep", repo.path)
    client = GitHubClient(StaticToken("ghp_secret_token_2"), base_url=fake_github.base_url)
    remote = client.git_remote("acme", "deep")
    manager = WorktreeManager(tmp_path / "wt")
    head, base = repo.sha("feature"), repo.sha("main")
    path = manager.ensure_remote(3, 1, url=remote.url, sha=head, auth_header=remote.auth_header)
    merge_base = manager.ensure_remote_base(
        3, 1, url=remote.url, base_sha=base, head_sha=head, auth_header=remote.auth_header
    )
    assert merge_base == fork
    assert repo.git("-C", str(path), "rev-parse", "HEAD").strip() == head
    assert (path / "app.py").read_text() == "print(59)\n" and not (path / "other.py").exists()
    assert repo.git("-C", str(path), "show", f"{base}:other.py") == "X = 2\n"
    for folder, _, files in os.walk(path / ".git"):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                assert b"ghp_secret_token_2" not in handle.read(), name
    # Asked again, nothing more is fetched: the merge base is already there.
    fetches = len(fake_github.requests)
    assert (
        manager.ensure_remote_base(
            3, 1, url=remote.url, base_sha=base, head_sha=head, auth_header=remote.auth_header
        )
        == fork
    )
    assert len(fake_github.requests) == fetches
