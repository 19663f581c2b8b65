"""Isolated checkouts for review rounds, one per (space, round), under a configured root.

Reviewer agents read code only inside these directories, so every path is
checked to stay under the root, and `safe_join` is what the read-only tools use to open files.

A local repository is never written to: its checkout is a repository of Quorum's own that
borrows the source's objects (git alternates), so the source's `git worktree list` stays as it
was, and a file whose content the source does not have (a blob a partial clone left out) is
listed as unread instead of failing the checkout.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePath
from urllib.parse import urlsplit

from reviews.sources.gitcmd import GitError, GitNotFound, run_git

_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
#: Inside a checkout's `.git`: the paths whose content the source repository did not have.
UNREAD_FILE = "quorum-unread"


class UnsafePath(ValueError):
    """A path or id would lead outside the directory it must stay in."""


def safe_join(root: Path | str, relative: str | PurePath) -> Path:
    """`root / relative` with symlinks resolved, refusing anything that ends up outside `root`.

    Absolute paths, NUL bytes and `..` or symlinks escaping the root raise UnsafePath. A path
    that does not exist yet is allowed if it would be inside. (A symlink created between this
    check and the open is out of scope: worktrees are not writable by the agents.)
    """
    text = os.fspath(relative)
    if "\x00" in text:
        raise UnsafePath("path contains a NUL byte")
    if PurePath(text).is_absolute() or text.startswith("~"):
        raise UnsafePath(f"absolute paths are not allowed: {text!r}")
    real_root = os.path.realpath(root)
    candidate = os.path.realpath(os.path.join(real_root, text))
    if candidate != real_root and not candidate.startswith(real_root.rstrip(os.sep) + os.sep):
        raise UnsafePath(f"path escapes the root: {text!r}")
    return Path(candidate)


class WorktreeManager:
    """Creates, reuses and removes `<root>/<space_id>/<round>` checkouts of one commit each."""

    def __init__(
        self,
        root: Path | str,
        *,
        git: str = "git",
        timeout: float = 120.0,
        fetch_timeout: float = 600.0,
    ) -> None:
        self.root = Path(root)
        self._git = git
        self._timeout = timeout
        self._fetch_timeout = fetch_timeout

    # -- paths -----------------------------------------------------------------------------

    def path_for(self, space_id: int | str, round_number: int) -> Path:
        """Where the checkout of this space and round lives; ids are validated, never trusted."""
        space = _check_id(space_id, "space id")
        if isinstance(round_number, bool) or not isinstance(round_number, int) or round_number < 0:
            raise UnsafePath(f"round number must be a non-negative int, got {round_number!r}")
        self.root.mkdir(parents=True, exist_ok=True)
        return safe_join(self.root, f"{space}/{round_number}")

    # -- create ----------------------------------------------------------------------------

    def ensure_local(
        self, space_id: int | str, round_number: int, *, repo: Path | str, sha: str
    ) -> Path:
        """A detached worktree of `sha` from the local repository `repo`; created once."""
        _check_sha(sha)
        path = self.path_for(space_id, round_number)
        with self._lock(path):
            if self._is_checkout_of(path, sha):
                return path
            self._remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
            try:
                self._borrow_into(staging, Path(repo), sha)
                os.rename(staging, path)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            return path

    def _borrow_into(self, target: Path, repo: Path, sha: str) -> None:
        """Check `sha` out into a new repository at `target` that reads `repo`'s objects.

        Only trees are needed up front: each blob is asked for once (`cat-file --batch-check`
        in a repository with no promisor remote answers "missing" instead of fetching), the
        present ones are written by `checkout-index`, the others are listed in UNREAD_FILE.
        """
        source = run_git(
            ["rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=repo,
            timeout=self._timeout,
            git=self._git,
        )
        objects = Path(source.stdout.decode("utf-8", "replace").strip()) / "objects"
        self._git_in(target, "init", "--quiet")
        (target / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n", "utf-8")
        self._git_in(target, "read-tree", sha)
        listing = self._git_in(target, "ls-files", "--stage", "-z").stdout
        blobs: dict[str, list[str]] = {}
        for entry in listing.split(b"\0"):
            if not entry:
                continue
            meta, _, name = entry.partition(b"\t")
            mode, oid, _stage = meta.decode("ascii").split(" ")
            if mode != "160000":  # a submodule is a commit of another repository: no content
                blobs.setdefault(oid, []).append(name.decode("utf-8", "surrogateescape"))
        present = self._git_in(
            target, "cat-file", "--batch-check=%(objectname)", stdin="\n".join(blobs) + "\n"
        ).stdout.decode("ascii", "replace")
        missing_oids = {
            line.split(" ")[0] for line in present.splitlines() if line.endswith(" missing")
        }
        unread = sorted(path for oid in missing_oids for path in blobs.get(oid, []))
        readable = [p for oid, paths in blobs.items() if oid not in missing_oids for p in paths]
        if readable:
            self._git_in(
                target,
                "checkout-index",
                "--force",
                "-z",
                "--stdin",
                stdin="\0".join(readable) + "\0",
                surrogates=True,
            )
        (target / ".git" / "HEAD").write_text(f"{sha}\n", "ascii")
        (target / ".git" / UNREAD_FILE).write_text(
            "".join(f"{p}\n" for p in unread), "utf-8", errors="surrogateescape"
        )

    def _git_in(self, target: Path, *args: str, stdin: str | None = None, surrogates: bool = False):
        data = None
        if stdin is not None:
            data = stdin.encode("utf-8", "surrogateescape" if surrogates else "strict")
        return run_git(list(args), cwd=target, timeout=self._timeout, git=self._git, input=data)

    def ensure_remote(
        self,
        space_id: int | str,
        round_number: int,
        *,
        url: str,
        sha: str,
        auth_header: str | None = None,
    ) -> Path:
        """A checkout of `sha` fetched (depth 1) from `url`; created once.

        `auth_header` (e.g. "Authorization: Basic …") reaches git through GIT_CONFIG_* variables:
        not on the command line (visible in `ps`), not in the URL, not in .git/config.
        """
        _check_sha(sha)
        _check_url(url)
        path = self.path_for(space_id, round_number)
        with self._lock(path):
            if self._is_checkout_of(path, sha):
                return path
            self._remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            # Build beside the final path and rename into place, so a crash leaves no
            # half-fetched directory that looks like a finished checkout.
            staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
            try:
                self._fetch_into(staging, url, sha, auth_header)
                os.rename(staging, path)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            return path

    def ensure_remote_base(
        self,
        space_id: int | str,
        round_number: int,
        *,
        url: str,
        base_sha: str,
        head_sha: str,
        auth_header: str | None = None,
    ) -> str:
        """Fetch `base_sha` into the round's checkout of `head_sha` (made by `ensure_remote`)
        and deepen both until their merge base is there; returns the merge base, which is what
        a pull request's diff is taken against. The checked-out files stay at the head."""
        _check_sha(base_sha)
        _check_sha(head_sha)
        _check_url(url)
        path = self.path_for(space_id, round_number)
        with self._lock(path):
            if not self._is_checkout_of(path, head_sha):
                raise GitNotFound(f"no checkout of {head_sha} for this round")
            env = _auth_env(auth_header)
            if not self._has_commit(path, base_sha):
                self._fetch(path, ["--depth=1", url, base_sha], env)
            # Shallow histories first, then the whole history: most branches are young.
            for deepen in ("--deepen=50", "--deepen=500", "--unshallow"):
                merge_base = self._merge_base(path, base_sha, head_sha)
                if merge_base is not None:
                    return merge_base
                if not (path / ".git" / "shallow").exists():
                    break
                self._fetch(path, [deepen, url, base_sha, head_sha], env)
            merge_base = self._merge_base(path, base_sha, head_sha)
            if merge_base is None:
                raise GitNotFound(f"no merge base between {base_sha} and {head_sha}")
            return merge_base

    def _fetch(self, path: Path, args: list[str], env: dict[str, str]) -> None:
        run_git(
            ["fetch", "--quiet", "--no-tags", *args],
            cwd=path,
            env=env,
            timeout=self._fetch_timeout,
            git=self._git,
        )

    def _has_commit(self, path: Path, sha: str) -> bool:
        proc = run_git(
            ["cat-file", "-e", f"{sha}^{{commit}}"],
            cwd=path,
            timeout=self._timeout,
            git=self._git,
            check=False,
        )
        return proc.returncode == 0

    def _merge_base(self, path: Path, base_sha: str, head_sha: str) -> str | None:
        proc = run_git(
            ["merge-base", base_sha, head_sha],
            cwd=path,
            timeout=self._timeout,
            git=self._git,
            check=False,
        )
        out = proc.stdout.decode("ascii", "replace").strip()
        return out if proc.returncode == 0 and _SHA.fullmatch(out) else None

    def _fetch_into(self, target: Path, url: str, sha: str, auth_header: str | None) -> None:
        env = _auth_env(auth_header)
        run_git(["init", "--quiet", str(target)], timeout=self._timeout, git=self._git)
        run_git(
            ["fetch", "--quiet", "--no-tags", "--depth=1", url, sha],
            cwd=target,
            env=env,
            timeout=self._fetch_timeout,
            git=self._git,
        )
        run_git(
            ["checkout", "--quiet", "--detach", sha],
            cwd=target,
            timeout=self._timeout,
            git=self._git,
        )

    # -- inspect / remove ------------------------------------------------------------------

    def _is_checkout_of(self, path: Path, sha: str) -> bool:
        if not (path / ".git").exists():
            return False
        if _detached_head(path) == sha:
            return True  # every runner of a round asks: answered without starting git
        try:
            head = run_git(["rev-parse", "HEAD"], cwd=path, timeout=self._timeout, git=self._git)
        except GitError:
            return False
        return head.stdout.decode("ascii", "replace").strip() == sha

    def cleanup(self, space_id: int | str, round_number: int) -> None:
        """Remove the checkout (and its registration in the source repository); idempotent."""
        path = self.path_for(space_id, round_number)
        with self._lock(path):
            self._remove(path)
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only succeeds when this was the space's last round

    def _remove(self, path: Path) -> None:
        if not path.exists() and not path.is_symlink():
            return
        common_dir = self._linked_common_dir(path)
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path)
        if common_dir is not None:
            # The source repository still lists the worktree until pruned.
            with contextlib.suppress(GitError):
                run_git(
                    ["--git-dir", str(common_dir), "worktree", "prune"],
                    timeout=self._timeout,
                    git=self._git,
                )

    def _linked_common_dir(self, path: Path) -> Path | None:
        # A linked worktree has a `.git` file pointing into the source repository.
        if not (path / ".git").is_file():
            return None
        try:
            out = run_git(
                ["rev-parse", "--path-format=absolute", "--git-common-dir"],
                cwd=path,
                timeout=self._timeout,
                git=self._git,
            )
        except GitError:
            return None
        return Path(out.stdout.decode("utf-8", "replace").strip())

    @contextlib.contextmanager
    def _lock(self, path: Path) -> Iterator[None]:
        # Two workers preparing the same round must not both run `git worktree add`.
        locks = self.root / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        lock_path = locks / f"{path.parent.name}-{path.name}.lock"
        with open(lock_path, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def unread_files(checkout: Path) -> list[str]:
    """The paths of `checkout` that could not be written because their content was missing."""
    try:
        text = (checkout / ".git" / UNREAD_FILE).read_text("utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line]


def _detached_head(path: Path) -> str | None:
    """The commit a checkout's HEAD names when it is detached, read from its files (a linked
    worktree's `.git` file points at its own directory in the source repository); None when it
    cannot tell (a branch, a packed or unusual layout): then git is asked."""
    dot_git = path / ".git"
    try:
        if dot_git.is_file():
            pointer = dot_git.read_text("utf-8").strip()
            if not pointer.startswith("gitdir:"):
                return None
            gitdir = Path(pointer.removeprefix("gitdir:").strip())
            if not gitdir.is_absolute():
                gitdir = path / gitdir
        else:
            gitdir = dot_git
        head = (gitdir / "HEAD").read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return head if _SHA.fullmatch(head) else None


def _check_id(value: int | str, what: str) -> str:
    if isinstance(value, bool):
        raise UnsafePath(f"{what} must be an int or a slug, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise UnsafePath(f"{what} must be non-negative, got {value!r}")
        return str(value)
    if isinstance(value, str) and _SLUG.fullmatch(value):
        return value
    raise UnsafePath(f"{what} must be an int or a slug, got {value!r}")


def _check_sha(sha: str) -> None:
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise GitNotFound(f"a full commit SHA is required, got {sha!r}")


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http", "file"):
        raise UnsafePath(f"unsupported remote URL scheme: {parts.scheme!r}")
    if parts.username or parts.password:
        # Credentials in a URL end up in logs and error messages; use auth_header instead.
        raise UnsafePath("remote URL must not carry credentials")


def _auth_env(auth_header: str | None) -> dict[str, str]:
    if not auth_header:
        return {}
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": auth_header,
    }
