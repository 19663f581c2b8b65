"""Tests attached where a maintainer would attach them: the cohorts of a release range read
against tests/bench/corpus/test_attachment.toml, where each changed test file is labelled with
the changed code it belongs with (or "none": no code counterpart, listed but not counted).

A labelled test is right when it sits in exactly one cohort and that cohort holds one of its
code files. A test the index does not cover (a .json fixture, a .proto) is grouped by path, not
attached: it is counted apart, as outside the index.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from reviews.domain.indexed_files import is_test_path
from reviews.index.cohort_types import Cohort
from reviews.index.cohorts import CONFIG_DOCS_LABEL, NOT_INDEXED_FILE_LABEL, UNLINKED_TESTS_LABEL

LABELS = Path(__file__).parent / "corpus" / "test_attachment.toml"
NO_COUNTERPART = "none"
_OUTSIDE = (NOT_INDEXED_FILE_LABEL, CONFIG_DOCS_LABEL)


@dataclass
class Attachment:
    right: int = 0
    counted: int = 0
    outside: int = 0
    no_counterpart: int = 0
    wrong: list[str] = field(default_factory=list)

    def add(self, other: Attachment) -> None:
        self.right += other.right
        self.counted += other.counted
        self.outside += other.outside
        self.no_counterpart += other.no_counterpart
        self.wrong += other.wrong

    def summary(self) -> str:
        rate = f" ({self.right / self.counted:.0%})" if self.counted else ""
        return (
            f"{self.right}/{self.counted}{rate} rightly; {self.no_counterpart} without a code "
            f"counterpart and {self.outside} outside the index not counted"
        )


def labels_of(repository: str, path: Path = LABELS) -> dict[str, list[str] | str]:
    """test path → its labelled code files, or "none"."""
    rows = tomllib.loads(path.read_text())["test"]
    return {r["path"]: r["code"] for r in rows if r["repository"] == repository}


def attachment(cohorts: tuple[Cohort, ...], labels: dict[str, list[str] | str]) -> Attachment:
    """Each labelled test file of the change judged against where the cohorts put it."""
    found = Attachment()
    for path, code in sorted(labels.items()):
        homes = [c for c in cohorts if path in c.paths]
        if code == NO_COUNTERPART:
            found.no_counterpart += 1
            continue
        if homes and all(c.label in _OUTSIDE for c in homes):
            found.outside += 1
            continue
        found.counted += 1
        verdict = _wrong(homes, set(code))
        if verdict is None:
            found.right += 1
        else:
            found.wrong.append(f"{path}: {verdict} (belongs with {_names(code)})")
    return found


def _wrong(homes: list[Cohort], code: set[str]) -> str | None:
    if len(homes) != 1:
        return f"in {len(homes)} cohorts"
    home = homes[0]
    if home.label == UNLINKED_TESTS_LABEL:
        return "without a link"
    if code & set(home.paths):
        return None
    return "went with " + _names([p for p in home.paths if not is_test_path(p)])


def _names(paths: list[str] | str, most: int = 3) -> str:
    names = [p.rpartition("/")[2] for p in paths]
    return ", ".join(names[:most]) + (f" +{len(names) - most}" if len(names) > most else "")
