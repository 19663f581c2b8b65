"""Running git safely: argument lists, no prompts, a timeout, and errors that say whether a retry
can help."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

DEFAULT_TIMEOUT = 60.0

# Config forced on every call. Hooks and fsmonitor are commands a repository's config can make us
# run; a review server only reads code, so neither is wanted. Fixed prefixes and quoting keep the
# diff parseable whatever the user's ~/.gitconfig says.
_SAFE_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
    "-c",
    "advice.detachedHead=false",
)

# stderr fragments of failures that can pass by themselves (network, lock contention).
_TRANSIENT_MARKERS = (
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "connection reset",
    "operation timed out",
    "early eof",
    "rpc failed",
    "the remote end hung up unexpectedly",
    "returned error: 5",
    "returned error: 429",
    ".lock': file exists",
    "temporary failure",
)
_NOT_FOUND_MARKERS = (
    "unknown revision",
    "bad revision",
    "bad object",
    "invalid object name",
    "not a valid object name",
    "needed a single revision",
    "does not exist in",
    "exists on disk, but not in",
    "not our ref",
    "couldn't find remote ref",
    "no merge base",
)


class GitError(Exception):
    """A git command failed. `retryable` says whether running it again may succeed."""

    retryable: bool = False

    def __init__(self, message: str, *, stderr: str = "", retryable: bool | None = None) -> None:
        super().__init__(message)
        self.stderr = stderr
        if retryable is not None:
            self.retryable = retryable


class GitTimeout(GitError):
    retryable = True


class GitNotFound(GitError):
    """A ref, commit or path does not exist (retrying will not make it appear)."""


class GitUnavailable(GitError):
    """A transient failure: network, remote 5xx, a lock held by another process."""

    retryable = True


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            # Never wait for a password on a terminal nobody is watching.
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "true",
            "SSH_ASKPASS": "true",
            "GIT_SSH_COMMAND": "ssh -oBatchMode=yes",
            # English messages: error classification reads stderr.
            "LC_ALL": "C",
            "LANGUAGE": "C",
            # Reads should not take locks a concurrent writer needs.
            "GIT_OPTIONAL_LOCKS": "0",
        }
    )
    if extra:
        env.update(extra)
    return env


def run_git(
    args: Sequence[str],
    *,
    cwd: Path | str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    env: Mapping[str, str] | None = None,
    git: str = "git",
    check: bool = True,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git <args>` and return the completed process (stdout as bytes).

    `env` adds variables (e.g. GIT_CONFIG_* carrying an auth header, so it never appears in the
    process list or on disk). `input` is written to git's stdin (else stdin is empty). Raises a
    GitError subclass on failure when `check` is true.
    """
    cmd = [git, *_SAFE_CONFIG, *args]
    shown = " ".join(["git", *args])
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=git_env(env),
            capture_output=True,
            timeout=timeout,
            input=input if input is not None else b"",
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitTimeout(f"{shown}: timed out after {timeout:g}s") from exc
    except OSError as exc:
        raise GitError(f"{shown}: cannot run git ({exc})") from exc
    if check and proc.returncode != 0:
        raise classify_failure(shown, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc


def classify_failure(shown: str, returncode: int, stderr: str) -> GitError:
    low = stderr.lower()
    message = f"{shown}: exit {returncode}: {stderr.strip()[:500]}"
    if any(marker in low for marker in _NOT_FOUND_MARKERS):
        return GitNotFound(message, stderr=stderr)
    if any(marker in low for marker in _TRANSIENT_MARKERS):
        return GitUnavailable(message, stderr=stderr)
    return GitError(message, stderr=stderr)
