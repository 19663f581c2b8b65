"""Unified diffs as data: changed files, hunks and the positions a review comment may anchor to.

Pure (no git, no network): the same parser reads `git diff` output and GitHub's PR diff.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import unidiff

from reviews.domain import vendored

LEFT = "LEFT"
RIGHT = "RIGHT"
SIDES = (LEFT, RIGHT)

DEFAULT_MAX_FILE_LINES = 3_000
DEFAULT_MAX_FILE_BYTES = 256 * 1024


class DiffParseError(ValueError):
    """The text is not a unified diff we can read."""


class FileStatus(enum.StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"
    # Binary wins over the others: there is nothing line-based to show or comment on. Whether
    # the binary was added or deleted is still visible from old_path/new_path being None.
    BINARY = "binary"


@dataclass(frozen=True)
class Position:
    path: str
    line: int
    side: str  # LEFT (old file) or RIGHT (new file), as in the GitHub review API


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "+" added, "-" deleted, " " context
    old_line: int | None
    new_line: int | None
    text: str


@dataclass(frozen=True)
class Hunk:
    index: int  # 0-based within its file; the hunk id used for "inside one hunk" checks
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str
    lines: tuple[DiffLine, ...]
    text: str  # the hunk as it appears in the patch, from its @@ line


@dataclass(frozen=True)
class ChangedFile:
    path: str  # the new path, or the old one for a deletion
    old_path: str | None  # None when added
    new_path: str | None  # None when deleted
    status: FileStatus
    additions: int
    deletions: int
    hunks: tuple[Hunk, ...]
    # Binary, very large, vendored, generated and minified files are listed for people but kept
    # out of model prompts (reviews/domain/vendored.py).
    not_for_models: bool = False
    # "binary" | "large" | "vendored" | "generated" | "minified"
    not_for_models_reason: str | None = None
    # The new blob id from the `index` line (None when the diff has none, or for a deletion):
    # what keys a viewed mark on a file without hunks (reviews/domain/file_tree.py).
    blob: str | None = None

    @property
    def is_binary(self) -> bool:
        return self.status is FileStatus.BINARY

    @property
    def patch(self) -> str | None:
        """The file's patch from its first @@ (the shape of GitHub's files API), None if none."""
        return "".join(h.text for h in self.hunks) or None


class CommentableLines:
    """Where a review comment may anchor in one diff.

    Maps (path, side, line) to the index of the hunk holding that line, because GitHub accepts
    a multi-line comment only when its first and last line sit in the same hunk.
    """

    def __init__(self, entries: Mapping[tuple[str, str, int], int] | None = None) -> None:
        self._hunks: dict[tuple[str, str, int], int] = dict(entries or {})

    @classmethod
    def from_files(cls, files: Iterable[ChangedFile]) -> CommentableLines:
        entries: dict[tuple[str, str, int], int] = {}
        for changed in files:
            for hunk in changed.hunks:
                for line in hunk.lines:
                    # Added and context lines exist on the new side, deleted and context lines
                    # on the old side (GitHub's anchoring rules).
                    if line.new_line is not None:
                        entries[(changed.path, RIGHT, line.new_line)] = hunk.index
                    if line.old_line is not None:
                        entries[(changed.path, LEFT, line.old_line)] = hunk.index
        return cls(entries)

    def hunk_of(self, path: str, line: int, side: str) -> int | None:
        return self._hunks.get((path, side, line))

    def same_hunk(self, path: str, start: int, end: int, side: str) -> int | None:
        """The hunk holding every line start..end on `side`, or None if there is no such hunk."""
        if start > end:
            return None
        first = self.hunk_of(path, start, side)
        if first is None:
            return None
        for line in range(start + 1, end + 1):
            if self.hunk_of(path, line, side) != first:
                return None
        return first

    def positions(self) -> frozenset[Position]:
        return frozenset(Position(path, line, side) for path, side, line in self._hunks)

    def paths(self) -> frozenset[str]:
        return frozenset(path for path, _, _ in self._hunks)

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, Position):
            return False
        return (item.path, item.side, item.line) in self._hunks

    def __iter__(self) -> Iterator[Position]:
        return iter(self.positions())

    def __len__(self) -> int:
        return len(self._hunks)


def parse_unified_diff(
    text: str,
    *,
    max_file_lines: int = DEFAULT_MAX_FILE_LINES,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> list[ChangedFile]:
    """Parse `git diff`-style text (with `diff --git` headers) into changed files."""
    try:
        patch_set = unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as exc:
        raise DiffParseError(str(exc)) from exc
    return [_changed_file(pf, max_file_lines, max_file_bytes) for pf in patch_set]


def _changed_file(pf: unidiff.PatchedFile, max_lines: int, max_bytes: int) -> ChangedFile:
    old_path = _strip_prefix(pf.source_file, "a/")
    new_path = _strip_prefix(pf.target_file, "b/")
    if pf.is_added_file:
        old_path = None
    if pf.is_removed_file:
        new_path = None
    hunks = tuple(_hunk(index, h) for index, h in enumerate(pf))
    if pf.is_binary_file:
        status = FileStatus.BINARY
    elif old_path is None:
        status = FileStatus.ADDED
    elif new_path is None:
        status = FileStatus.DELETED
    elif old_path != new_path:
        status = FileStatus.RENAMED
    else:
        status = FileStatus.MODIFIED
    additions = sum(1 for h in hunks for ln in h.lines if ln.kind == "+")
    deletions = sum(1 for h in hunks for ln in h.lines if ln.kind == "-")
    reason = None
    path = new_path if new_path is not None else old_path
    if path is None:
        raise DiffParseError(f"file without a path in diff: {pf.patch_info!r}")
    if status is FileStatus.BINARY:
        reason = "binary"
    elif (
        additions + deletions > max_lines
        or sum(len(h.text.encode("utf-8")) for h in hunks) > max_bytes
    ):
        reason = "large"
    elif new_path is not None:  # someone else's code or a tool's output: listed, not read
        reason = vendored.reason_for(
            path,
            [ln.text for h in hunks for ln in h.lines if ln.kind != "-"],
            from_start=bool(hunks) and hunks[0].new_start <= 1,
        )
    return ChangedFile(
        path=path,
        old_path=old_path,
        new_path=new_path,
        status=status,
        additions=additions,
        deletions=deletions,
        hunks=hunks,
        not_for_models=reason is not None,
        not_for_models_reason=reason,
        blob=_new_blob(pf.patch_info) if new_path is not None else None,
    )


_INDEX_LINE = re.compile(r"^index [0-9a-f]+\.\.([0-9a-f]+)")


def _new_blob(info: Iterable[str] | None) -> str | None:
    for line in info or ():
        found = _INDEX_LINE.match(line)
        if found:
            return found.group(1)
    return None


def _hunk(index: int, hunk: unidiff.Hunk) -> Hunk:
    lines = tuple(
        DiffLine(
            kind=line.line_type,
            old_line=line.source_line_no,
            new_line=line.target_line_no,
            text=line.value.removesuffix("\n"),
        )
        # "\ No newline at end of file" is a marker, not a line of either file.
        for line in hunk
        if line.line_type in ("+", "-", " ")
    )
    return Hunk(
        index=index,
        old_start=hunk.source_start,
        old_count=hunk.source_length,
        new_start=hunk.target_start,
        new_count=hunk.target_length,
        section=hunk.section_header,
        lines=lines,
        text=str(hunk),
    )


def _strip_prefix(raw: str, prefix: str) -> str | None:
    if raw == "/dev/null":
        return None
    if raw.startswith('"') and raw.endswith('"'):
        raw = _unquote_c_style(raw[1:-1])
    return raw.removeprefix(prefix)


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote_c_style(quoted: str) -> str:
    """Undo git's quoting of unusual paths ("a\\tb", octal bytes for non-ASCII)."""
    out = bytearray()
    i = 0
    while i < len(quoted):
        ch = quoted[i]
        if ch == "\\" and i + 1 < len(quoted):
            nxt = quoted[i + 1]
            octal = quoted[i + 1 : i + 4]
            if len(octal) == 3 and all(c in "01234567" for c in octal):
                out.append(int(octal, 8))
                i += 4
                continue
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
        out.extend(ch.encode("utf-8"))
        i += 1
    return out.decode("utf-8", "replace")
