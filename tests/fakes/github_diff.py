"""How the fake GitHub sees a pull request's changes: from real `git`, parsed independently of
the production parser (reviews.sources.diffs), so a bug there cannot hide in the fake too."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes.gitrepo import git

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_STATUS = {
    "A": "added",
    "D": "removed",
    "M": "modified",
    "R": "renamed",
    "C": "copied",
    "T": "changed",
}
_ZERO = "0" * 40


@dataclass
class FakeFile:
    filename: str
    previous_filename: str | None
    status: str
    sha: str
    patch: str | None  # from the first @@; None for binaries
    additions: int = 0
    deletions: int = 0
    # (side, line) -> hunk index: where GitHub accepts a review comment.
    anchors: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass
class FakeDiff:
    text: str
    files: list[FakeFile]

    def file(self, path: str) -> FakeFile | None:
        return next((f for f in self.files if f.filename == path), None)

    @property
    def line_count(self) -> int:
        return sum(f.additions + f.deletions for f in self.files)


def pull_diff(repo: Path, base_sha: str, head_sha: str) -> FakeDiff:
    """The three-dot diff GitHub shows for a PR: merge-base(base, head)..head."""
    merge_base = git("merge-base", base_sha, head_sha, cwd=repo).strip()
    common = ["-c", "core.quotePath=false", "diff", "--no-color", "-M", "--full-index"]
    text = git(*common, "--src-prefix=a/", "--dst-prefix=b/", merge_base, head_sha, cwd=repo)
    raw = git(*common, "--raw", "-z", "--no-abbrev", merge_base, head_sha, cwd=repo)
    entries = _parse_raw(raw)
    sections = _split_sections(text)
    if len(entries) != len(sections):
        raise AssertionError(f"raw ({len(entries)}) and patch ({len(sections)}) disagree")
    files = [_file(entry, section) for entry, section in zip(entries, sections, strict=True)]
    return FakeDiff(text=text, files=files)


def _parse_raw(raw: str) -> list[tuple[str, str, str, str | None]]:
    """(status letter, blob sha, path, previous path) from `git diff --raw -z`."""
    fields = raw.split("\0")
    out = []
    i = 0
    while i < len(fields) and fields[i].startswith(":"):
        meta = fields[i][1:].split(" ")
        old_sha, new_sha, letter = meta[2], meta[3], meta[4][0]
        if letter in "RC":
            previous, path = fields[i + 1], fields[i + 2]
            i += 3
        else:
            previous, path = None, fields[i + 1]
            i += 2
        out.append((letter, new_sha if new_sha != _ZERO else old_sha, path, previous))
    return out


def _split_sections(text: str) -> list[list[str]]:
    sections: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("diff --git "):
            sections.append([])
        if sections:
            sections[-1].append(line)
    return sections


def _file(entry: tuple[str, str, str, str | None], section: list[str]) -> FakeFile:
    letter, sha, path, previous = entry
    first_hunk = next((i for i, ln in enumerate(section) if ln.startswith("@@")), None)
    patch = "".join(section[first_hunk:]) if first_hunk is not None else None
    changed = FakeFile(
        filename=path,
        previous_filename=previous if letter == "R" else None,
        status=_STATUS.get(letter, "modified"),
        sha=sha,
        # GitHub's patch has no trailing newline after the last line.
        patch=patch.rstrip("\n") if patch else None,
    )
    if patch:
        _read_hunks(changed, patch)
    return changed


def _read_hunks(changed: FakeFile, patch: str) -> None:
    hunk = -1
    old = new = 0
    for line in patch.split("\n"):
        match = _HUNK.match(line)
        if match:
            hunk += 1
            old, new = int(match.group(1)), int(match.group(3))
        elif line.startswith("+"):
            changed.anchors[("RIGHT", new)] = hunk
            changed.additions += 1
            new += 1
        elif line.startswith("-"):
            changed.anchors[("LEFT", old)] = hunk
            changed.deletions += 1
            old += 1
        elif line.startswith(" "):
            changed.anchors[("RIGHT", new)] = hunk
            changed.anchors[("LEFT", old)] = hunk
            old += 1
            new += 1
        # "\ No newline at end of file" and the final empty split are not lines.
