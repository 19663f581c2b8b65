"""Read-only code tools for reviewer agents, confined to one worktree.

Every method returns text for the model. A refused or failed call returns a message starting
with `error:` instead of raising: a model that asks for `../../etc/passwd` should learn why and
carry on reviewing, not end the run. Paths go through `safe_join` (symlinks resolved, trailing
separator checked), and anything inside `.git` is refused: hooks, config and packed refs are not
the change under review and may hold credentials (a remote URL with a token).

Outputs are capped so one call cannot flood the model's context (and the token budget).
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

from reviews.sources.diffs import ChangedFile
from reviews.sources.worktrees import UnsafePath, safe_join

ERROR_PREFIX = "error: "

MAX_READ_LINES = 400
MAX_OUTPUT_CHARS = 24_000
MAX_LIST_ENTRIES = 500
MAX_GREP_MATCHES = 200
MAX_GREP_FILE_BYTES = 1024 * 1024
MAX_GREP_TOTAL_BYTES = 32 * 1024 * 1024
# Matching runs on lines cut to this length: with the pattern checks below, the worst case per
# line stays polynomial in a small number instead of exponential in a minified bundle's length.
MAX_GREP_LINE_CHARS = 400
MAX_PATTERN_CHARS = 200
MAX_UNBOUNDED_REPEATS = 3
GREP_DEADLINE_SECONDS = 5.0
MAX_READ_FILE_BYTES = 4 * 1024 * 1024
_BINARY_SNIFF = 8192
_GLOB = re.compile(r"[*?\[]")


def _error(message: str) -> str:
    return ERROR_PREFIX + message


class CodeTools:
    """`read_file`, `list_files`, `grep` and `get_diff` over `root`, and `read`, the one tool a
    model is offered for the first three; nothing here writes."""

    def __init__(
        self,
        root: Path | str,
        *,
        changed_files: Sequence[ChangedFile] = (),
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.changed_files = tuple(changed_files)
        self.max_output_chars = max_output_chars

    # -- path policy ---------------------------------------------------------------------------

    def resolve(self, path: str) -> Path | str:
        """The real path of `path` under the root, or an `error:` message saying why not."""
        if not isinstance(path, str) or not path.strip():
            return _error("path must be a non-empty string relative to the repository root")
        try:
            resolved = safe_join(self.root, path)
        except UnsafePath as exc:
            return _error(f"{exc}; paths must stay inside the repository under review")
        relative = resolved.relative_to(self.root)
        if ".git" in relative.parts:
            return _error(f"{path!r} is inside .git, which review tools do not read")
        return resolved

    def _display(self, resolved: Path) -> str:
        relative = resolved.relative_to(self.root).as_posix()
        return relative or "."

    # -- tools -------------------------------------------------------------------------------

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Lines `start_line`..`end_line` (1-based, inclusive) of a file, each prefixed with its
        number. At most MAX_READ_LINES lines per call; ask again with a later `start_line`."""
        resolved = self.resolve(path)
        if isinstance(resolved, str):
            return resolved
        if not resolved.is_file():
            return _error(f"{path!r} is not a file in the repository")
        start = 1 if start_line is None else start_line
        if not isinstance(start, int) or isinstance(start, bool) or start < 1:
            return _error("start_line must be an integer of 1 or more")
        if end_line is not None and (
            not isinstance(end_line, int) or isinstance(end_line, bool) or end_line < start
        ):
            return _error("end_line must be an integer no smaller than start_line")
        try:
            if resolved.stat().st_size > MAX_READ_FILE_BYTES:
                return _error(f"{path!r} is larger than {MAX_READ_FILE_BYTES} bytes")
            with open(resolved, "rb") as handle:
                if b"\x00" in handle.read(_BINARY_SNIFF):
                    return _error(f"{path!r} is a binary file")
            data = resolved.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return _error(f"could not read {path!r} ({exc.strerror or type(exc).__name__})")
        lines = data.splitlines()
        total = len(lines)
        if total == 0:
            return f"{self._display(resolved)} is empty."
        if start > total:
            return _error(f"start_line {start} is past the end of {path!r} ({total} lines)")
        last = min(total, end_line if end_line is not None else total, start + MAX_READ_LINES - 1)
        width = len(str(last))
        body = "\n".join(f"{n:>{width}}| {lines[n - 1]}" for n in range(start, last + 1))
        header = f"{self._display(resolved)} lines {start}-{last} of {total}"
        more = "" if last in (total, end_line) else f"\n[more: continue at {last + 1}]"
        return self._cap(f"{header}\n{body}{more}")

    def list_files(self, directory: str = ".", pattern: str | None = None) -> str:
        """Files under `directory` (recursive, `.git` skipped), optionally filtered by a glob
        matched against the relative path or the file name, e.g. `*.py` or `src/**/test_*`."""
        resolved = self.resolve(directory)
        if isinstance(resolved, str):
            return resolved
        if not resolved.is_dir():
            return _error(f"{directory!r} is not a directory in the repository")
        entries: list[str] = []
        truncated = False
        for current, dirs, files in os.walk(resolved):  # does not follow directory symlinks
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(files):
                relative = (Path(current) / name).relative_to(self.root).as_posix()
                if pattern and not (
                    fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern)
                ):
                    continue
                if len(entries) >= MAX_LIST_ENTRIES:
                    truncated = True
                    break
                entries.append(relative)
            if truncated:
                break
        if not entries:
            return f"No files under {self._display(resolved)}" + (
                f" matching {pattern!r}." if pattern else "."
            )
        suffix = f"\n[truncated at {MAX_LIST_ENTRIES} entries]" if truncated else ""
        return self._cap("\n".join(entries) + suffix)

    def grep(self, pattern: str, path: str | None = None, literal: bool = False) -> str:
        """Lines matching a Python regular expression (or a plain substring with `literal`),
        as `path:line: text`, in the file or directory `path` (default: the whole repository)."""
        if not isinstance(pattern, str) or not pattern:
            return _error("pattern must be a non-empty string")
        if len(pattern) > MAX_PATTERN_CHARS:
            return _error(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
        if literal:
            needle = pattern

            def matches(line: str) -> bool:
                return needle in line
        else:
            problem = regex_problem(pattern)
            if problem:
                return _error(f"{problem}; simplify the pattern or pass literal=true")
            compiled = re.compile(pattern)

            def matches(line: str) -> bool:
                return compiled.search(line) is not None

        target = self.resolve(path or ".")
        if isinstance(target, str):
            return target
        if target.is_file():
            files = [target]
        elif target.is_dir():
            files = self._walk_files(target)
        else:
            return _error(f"{path!r} does not exist in the repository")

        hits: list[str] = []
        scanned = 0
        deadline = time.monotonic() + GREP_DEADLINE_SECONDS
        stopped = ""
        for file in files:
            try:
                real = safe_join(self.root, file.relative_to(self.root))
                size = real.stat().st_size
            except (UnsafePath, OSError, ValueError):
                continue  # a symlink leading outside, or a file that vanished
            if size > MAX_GREP_FILE_BYTES or not real.is_file():
                continue
            scanned += size
            if scanned > MAX_GREP_TOTAL_BYTES:
                stopped = "[stopped: searched the size limit; narrow `path`]"
                break
            try:
                raw = real.read_bytes()
            except OSError:
                continue
            if b"\x00" in raw[:_BINARY_SNIFF]:
                continue
            shown = file.relative_to(self.root).as_posix()
            for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
                if matches(line[:MAX_GREP_LINE_CHARS]):
                    hits.append(f"{shown}:{number}: {line[:MAX_GREP_LINE_CHARS]}")
                    if len(hits) >= MAX_GREP_MATCHES:
                        stopped = f"[stopped at {MAX_GREP_MATCHES} matches]"
                        break
            if stopped:
                break
            if time.monotonic() > deadline:
                stopped = "[stopped: time limit; narrow `path` or the pattern]"
                break
        if not hits:
            return "No matches." + (f"\n{stopped}" if stopped else "")
        return self._cap("\n".join(hits) + (f"\n{stopped}" if stopped else ""))

    def read(
        self,
        path: str = ".",
        start_line: int | None = None,
        end_line: int | None = None,
        grep: str | None = None,
    ) -> str:
        """What a model reads through one tool: with `grep`, the lines matching that regex in
        the file or directory `path`; else a directory's files (a `path` with a glob lists the
        files matching it), or a file's lines. One schema instead of three goes out with every
        reviewer call. Lines apply to a file alone; elsewhere they are ignored.

        A pattern `grep` refuses (invalid, or one that could backtrack for ever) is searched as
        plain text, and the answer says so: a model that meant `foo(` gets what it meant."""
        if grep is not None:
            problem = regex_problem(grep) if isinstance(grep, str) and grep else None
            found = self.grep(grep, path, literal=problem is not None)
            return f"[searched as plain text: {problem}]\n{found}" if problem else found
        if isinstance(path, str) and _GLOB.search(path) and not os.path.lexists(self.root / path):
            # The glob's fixed leading directories are where to look; it matches paths below.
            parts = path.split("/")[:-1]
            fixed = itertools.takewhile(lambda part: not _GLOB.search(part), parts)
            return self.list_files("/".join(fixed) or ".", path)
        resolved = self.resolve(path)
        if isinstance(resolved, Path) and resolved.is_dir():
            return self.list_files(path)
        return self.read_file(path, start_line, end_line)

    def get_diff(self, path: str | None = None) -> str:
        """The change under review as a unified diff: one file's patch, or all of them."""
        if not self.changed_files:
            return "The diff is empty: no files changed."
        if path is None:
            chosen = list(self.changed_files)
        else:
            wanted = path.strip().removeprefix("./")
            chosen = [f for f in self.changed_files if wanted in (f.path, f.old_path, f.new_path)]
            if not chosen:
                return _error(
                    f"{path!r} is not among the changed files; call get_diff() to see them all"
                )
        return self._cap("\n".join(_render(changed) for changed in chosen))

    # -- helpers -------------------------------------------------------------------------------

    def _walk_files(self, directory: Path) -> list[Path]:
        found: list[Path] = []
        for current, dirs, files in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            found.extend(Path(current) / name for name in sorted(files))
        return found

    def _cap(self, text: str) -> str:
        if len(text) <= self.max_output_chars:
            return text
        cut = text[: self.max_output_chars].rsplit("\n", 1)[0]
        return f"{cut}\n[output truncated at {self.max_output_chars} characters]"


def _render(changed: ChangedFile) -> str:
    old = f"a/{changed.old_path}" if changed.old_path else "/dev/null"
    new = f"b/{changed.new_path}" if changed.new_path else "/dev/null"
    header = f"--- {old}\n+++ {new}\n"
    if changed.not_for_models:
        # Binary and very large files stay out of prompts (reviews.sources.diffs).
        return f"{header}[{changed.status} file, {changed.not_for_models_reason}: not shown]\n"
    return header + (changed.patch or f"[{changed.status}, no line changes]\n")


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is refused, or None when it is safe enough to run with `re`.

    Python's `re` backtracks and cannot be interrupted, so patterns that can blow up are refused
    up front: a repeat inside a repeat (`(a+)+`), alternation under a repeat (`(a|ab)*`),
    backreferences, and more than MAX_UNBOUNDED_REPEATS unbounded repeats. Together with the
    line-length cap this bounds the work per line.
    """
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"invalid regular expression ({exc})"
    try:
        # CPython's own parser: the only exact way to walk it (private, so typeshed omits it).
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover — other interpreters
        return "regular expressions are not supported here"
    constants = parser  # opcodes are re-exported by the parser module
    repeats = {constants.MAX_REPEAT, constants.MIN_REPEAT}
    repeats |= {getattr(constants, "POSSESSIVE_REPEAT", constants.MAX_REPEAT)}
    unbounded = 0

    def walk(items: object, in_repeat: bool) -> str | None:
        nonlocal unbounded
        for op, value in items:  # type: ignore[attr-defined]
            if op in repeats:
                _low, high, sub = value
                if in_repeat and high > 1:
                    return "nested repetition"
                if high == constants.MAXREPEAT:
                    unbounded += 1
                found = walk(sub, in_repeat or high > 1)
            elif op == constants.SUBPATTERN:
                found = walk(value[-1], in_repeat)
            elif op == constants.BRANCH:
                if in_repeat:
                    return "alternation inside a repetition"
                found = next((p for p in (walk(b, in_repeat) for b in value[1]) if p), None)
            elif op in (constants.GROUPREF, constants.GROUPREF_EXISTS):
                return "backreferences"
            elif op in (constants.ASSERT, constants.ASSERT_NOT):
                found = walk(value[1], in_repeat)
            elif op == getattr(constants, "ATOMIC_GROUP", None):
                found = walk(value, in_repeat)
            else:
                found = None
            if found:
                return found
        return None

    problem = walk(parser.parse(pattern), False)
    if problem:
        return problem
    if unbounded > MAX_UNBOUNDED_REPEATS:
        return f"more than {MAX_UNBOUNDED_REPEATS} unbounded repeats (*, +, {{n,}})"
    return None
