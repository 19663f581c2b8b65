"""The change as a tree of files, and the key a person's "viewed" mark is kept under.

A viewed mark belongs to a file's *content*, not to a round: it is keyed by the path and a hash
of what the diff changes in that file, with the hunk headers' line numbers left out. A new round
whose diff leaves the file as it was (a rebase that only moved it down, a push touching other
files) finds the same key and keeps the mark; any edit to the file's changed lines gives a new
key, so the file shows as not viewed again. A file without hunks (a pure rename, a binary file)
is keyed by its blob id when the diff names one.

Pure: plain values in, plain values out.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What the tree needs of one changed file (stored with the round, see `file_view_key`)."""

    path: str
    change: str  # added | modified | deleted | renamed | binary
    additions: int
    deletions: int
    key: str  # file_view_key(path, hunks, blob=…)
    old_path: str | None = None


def file_view_key(path: str, hunks: Iterable[str], *, blob: str | None = None) -> str:
    """The key of a file's viewed mark: sha256 of the path and the changed content.

    Hunk headers count without their line numbers, so the same edit further down the file keeps
    its key. Without hunks, the blob id (or, failing that, the path alone) stands for the file.
    """
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass"))
    texts = list(hunks)
    for text in texts:
        digest.update(b"\0@@")
        first, _, rest = text.partition("\n")
        digest.update(_HUNK_HEADER.sub("@@", first).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
        digest.update(rest.encode("utf-8", "surrogatepass"))
    if not texts and blob:
        digest.update(b"\0blob:" + blob.encode("ascii", "replace"))
    return digest.hexdigest()


def preview_anchor(cohort_key: str, path: str) -> str:
    """The element id of a file's preview inside one cohort (a file may sit in two cohorts)."""
    return f"file-{cohort_key[:12]}-{path_slug(path)}"


def path_slug(path: str) -> str:
    """A short stable id fragment for a path (for ids in the file tree)."""
    return hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()[:10]


def shown_lines(hunk_ranges: Iterable[tuple[str, int, int]]) -> dict[str, list[tuple[int, int]]]:
    """(path, new_start, new_count) of the previewed hunks → the new-side line ranges shown per
    path, as half-open (start, end) pairs."""
    out: dict[str, list[tuple[int, int]]] = {}
    for path, start, count in hunk_ranges:
        out.setdefault(path, []).append((start, start + count))
    return out


def is_shown(ranges: Mapping[str, Sequence[tuple[int, int]]], path: str, line: int) -> bool:
    """Whether a finding anchored at (path, line) sits on a line the previews show."""
    return any(start <= line < end for start, end in ranges.get(path, ()))


@dataclass(frozen=True, slots=True)
class TreeFile:
    path: str
    name: str
    change: str
    additions: int
    deletions: int
    findings: int
    key: str
    slug: str
    viewed: bool
    anchor: str | None  # the first preview of the file, when a cohort shows it
    old_path: str | None = None


@dataclass(frozen=True, slots=True)
class TreeDirectory:
    directory: str  # "" for the repository's top level
    files: tuple[TreeFile, ...]


@dataclass(frozen=True, slots=True)
class FileTree:
    directories: tuple[TreeDirectory, ...]

    @property
    def files(self) -> list[TreeFile]:
        return [f for d in self.directories for f in d.files]

    @property
    def total(self) -> int:
        return sum(len(d.files) for d in self.directories)

    @property
    def viewed(self) -> int:
        return sum(1 for d in self.directories for f in d.files if f.viewed)


def file_tree(
    files: Sequence[FileFacts],
    *,
    findings_per_path: Mapping[str, int],
    viewed_keys: Collection[str],
    anchors: Mapping[str, str],
) -> FileTree:
    """Every changed file grouped by directory (directories and names in path order), each
    with its +/- counts, its number of findings, its viewed mark and its preview anchor."""
    by_directory: dict[str, list[TreeFile]] = {}
    for facts in files:
        directory, name = posixpath.split(facts.path)
        by_directory.setdefault(directory, []).append(
            TreeFile(
                path=facts.path,
                name=name,
                change=facts.change,
                additions=facts.additions,
                deletions=facts.deletions,
                findings=findings_per_path.get(facts.path, 0),
                key=facts.key,
                slug=path_slug(facts.path),
                viewed=facts.key in viewed_keys,
                anchor=anchors.get(facts.path),
                old_path=facts.old_path if facts.old_path != facts.path else None,
            )
        )
    return FileTree(
        tuple(
            TreeDirectory(directory, tuple(sorted(entries, key=lambda f: f.name)))
            for directory, entries in sorted(by_directory.items())
        )
    )
