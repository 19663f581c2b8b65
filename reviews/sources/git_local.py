"""A review source backed by a local git repository.

Every call is `git` with an argument list, no prompt and a timeout (see gitcmd). Refs given by
people are resolved to full SHAs first, so nothing user-supplied reaches git as an option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reviews.sources.diffs import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILE_LINES,
    ChangedFile,
    CommentableLines,
    parse_unified_diff,
)
from reviews.sources.gitcmd import (
    DEFAULT_TIMEOUT,
    GitError,
    GitNotFound,
    GitTimeout,
    GitUnavailable,
    classify_failure,
    run_git,
)

__all__ = [
    "GitError",
    "GitNotFound",
    "GitTimeout",
    "GitUnavailable",
    "LocalDiff",
    "LocalGitSource",
]

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass(frozen=True)
class LocalDiff:
    base_sha: str
    head_sha: str
    merge_base_sha: str
    text: str
    files: tuple[ChangedFile, ...]
    commentable: CommentableLines

    def file(self, path: str) -> ChangedFile | None:
        return next((f for f in self.files if f.path == path), None)


class LocalGitSource:
    """Reads refs, diffs and file contents from one repository on disk (or a worktree of it)."""

    def __init__(
        self,
        repo_path: Path | str,
        *,
        git: str = "git",
        timeout: float = DEFAULT_TIMEOUT,
        max_file_lines: int = DEFAULT_MAX_FILE_LINES,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.repo_path = Path(repo_path)
        self._git = git
        self._timeout = timeout
        self._max_file_lines = max_file_lines
        self._max_file_bytes = max_file_bytes

    def _run(self, *args: str) -> bytes:
        return run_git(args, cwd=self.repo_path, timeout=self._timeout, git=self._git).stdout

    def _run_or_not_found(self, what: str, *args: str) -> str:
        # rev-parse --quiet and merge-base answer "no such thing" with exit 1 and no message.
        proc = run_git(args, cwd=self.repo_path, timeout=self._timeout, git=self._git, check=False)
        if proc.returncode == 1 and not proc.stderr.strip():
            raise GitNotFound(what)
        if proc.returncode != 0:
            raise classify_failure(
                "git " + " ".join(args), proc.returncode, proc.stderr.decode("utf-8", "replace")
            )
        return proc.stdout.decode("ascii", "replace").strip()

    def resolve(self, ref: str) -> str:
        """The full commit SHA `ref` names; GitNotFound if it names no commit."""
        if not ref or ref.startswith("-") or "\x00" in ref:
            raise GitNotFound(f"not a usable ref: {ref!r}")
        sha = self._run_or_not_found(
            f"ref {ref!r} does not name a commit",
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            f"{ref}^{{commit}}",
        )
        if not _SHA.fullmatch(sha):
            raise GitNotFound(f"ref {ref!r} does not name a commit")
        return sha

    def merge_base(self, base: str, head: str) -> str:
        base_sha, head_sha = self.resolve(base), self.resolve(head)
        out = self._run_or_not_found(
            f"no merge base between {base!r} and {head!r}", "merge-base", base_sha, head_sha
        )
        if not _SHA.fullmatch(out):
            raise GitNotFound(f"no merge base between {base!r} and {head!r}")
        return out

    def diff_text(self, from_sha: str, to_sha: str) -> str:
        """The unified diff from one commit to another, as `git diff` prints it for a PR."""
        for sha in (from_sha, to_sha):
            if not _SHA.fullmatch(sha):
                raise GitNotFound(f"diff_text takes full SHAs, got {sha!r}")
        out = self._run(
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--find-renames",
            "-M",
            "--full-index",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            from_sha,
            to_sha,
        )
        # Non-UTF-8 content is replaced for display; line numbering is unaffected.
        return out.decode("utf-8", "replace")

    def pull_diff_text(self, base: str, head: str) -> str:
        """The text of `diff(base, head)`, unparsed."""
        head_sha = self.resolve(head)
        return self.diff_text(self.merge_base(base, head_sha), head_sha)

    def diff(self, base: str, head: str) -> LocalDiff:
        """What a pull request from `head` into `base` changes: merge-base(base, head)..head."""
        base_sha = self.resolve(base)
        head_sha = self.resolve(head)
        mb = self.merge_base(base_sha, head_sha)
        text = self.diff_text(mb, head_sha)
        files = tuple(
            parse_unified_diff(
                text, max_file_lines=self._max_file_lines, max_file_bytes=self._max_file_bytes
            )
        )
        return LocalDiff(
            base_sha=base_sha,
            head_sha=head_sha,
            merge_base_sha=mb,
            text=text,
            files=files,
            commentable=CommentableLines.from_files(files),
        )

    def file_at(self, ref: str, path: str) -> bytes:
        """The bytes of `path` at `ref`; GitNotFound if the file is not there."""
        sha = self.resolve(ref)
        clean = path.lstrip("/")
        if not clean or "\x00" in clean:
            raise GitNotFound(f"not a usable path: {path!r}")
        return self._run("cat-file", "blob", f"{sha}:{clean}")

    def text_at(self, ref: str, path: str, *, max_bytes: int | None = None) -> str:
        """The text of `path` at `ref` (UTF-8, undecodable bytes replaced), optionally cut."""
        data = self.file_at(ref, path)
        if max_bytes is not None:
            data = data[:max_bytes]
        return data.decode("utf-8", "replace")

    def head_text(self, diff: LocalDiff, path: str) -> str:
        """The text of `path` as of the diff's head commit."""
        return self.text_at(diff.head_sha, path)
