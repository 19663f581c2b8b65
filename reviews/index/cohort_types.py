"""What a cohort is, as the page and the stored index read it: the cohort itself, its blast
radius, reading order, file previews and edges, its key and its JSON. Kept apart from the
grouping (cohorts) and the graph walk (cohort_graph) so both build the same shapes without
importing each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reviews.sources.diffs import Hunk

GRAPH_LABEL = "code graph"


@dataclass(frozen=True, slots=True)
class BlastRadius:
    definitions: int
    files: int


@dataclass(frozen=True, slots=True)
class ReadingStep:
    path: str
    symbols: tuple[str, ...]  # the changed symbols of this file, definitions before users
    is_test: bool


@dataclass(frozen=True, slots=True)
class FilePreview:
    path: str
    hunks: tuple[Hunk, ...]


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    kind: str


@dataclass(frozen=True, slots=True)
class Cohort:
    key: str
    label: str
    paths: tuple[str, ...]
    symbols: tuple[str, ...]
    context: tuple[str, ...]
    edges: tuple[Edge, ...]
    blast_radius: BlastRadius | None
    reading_order: tuple[ReadingStep, ...]
    diagram: str
    previews: tuple[FilePreview, ...]
    # Imports of the repository's own code in these files that the index could not resolve
    # ("path: specifier"): links the graph may be missing.
    unresolved_imports: tuple[str, ...] = ()
    # Paths other cohorts change too: their changed parts here share no link with those there.
    split_paths: tuple[str, ...] = ()

    @property
    def from_graph(self) -> bool:
        return self.label == GRAPH_LABEL

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "paths": list(self.paths),
            "symbols": list(self.symbols),
            "context": list(self.context),
            "edges": [[e.source, e.target, e.kind] for e in self.edges],
            "blast_radius": (
                None
                if self.blast_radius is None
                else {
                    "definitions": self.blast_radius.definitions,
                    "files": self.blast_radius.files,
                }
            ),
            "reading_order": [
                {"path": s.path, "symbols": list(s.symbols), "is_test": s.is_test}
                for s in self.reading_order
            ],
            "diagram": self.diagram,
            "previews": [
                {"path": p.path, "hunks": [hunk_json(h) for h in p.hunks]} for p in self.previews
            ],
            "unresolved_imports": list(self.unresolved_imports),
            "split_paths": list(self.split_paths),
        }


def cohorts_to_json(cohorts: Iterable[Cohort]) -> list[dict[str, Any]]:
    return [c.to_json() for c in cohorts]


def cohort_key(symbols: Iterable[str], paths: Iterable[str]) -> str:
    payload = "\n".join(sorted(set(symbols))) + "\n\0\n" + "\n".join(sorted(set(paths)))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def hunk_json(hunk: Hunk) -> dict[str, Any]:
    return {
        "index": hunk.index,
        "old_start": hunk.old_start,
        "old_count": hunk.old_count,
        "new_start": hunk.new_start,
        "new_count": hunk.new_count,
        "section": hunk.section,
        "text": hunk.text,
    }
