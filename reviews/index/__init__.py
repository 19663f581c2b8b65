"""The code index and what is computed from it without spending tokens.

Pure Python, no Django: definitions and references per file (Python through `ast`, other
languages through tree-sitter), cohorts of a change, and the deterministic axes. The Django
layer stores `CodeIndex.to_json()` and hands it back to `CodeIndex.from_json()` on a later round.
"""

from __future__ import annotations

from reviews.index.build import (
    build_index,
    changed_texts,
    files_at_commit,
    files_in_directory,
    parse_file,
    update_index,
)
from reviews.index.cohort_types import Cohort
from reviews.index.cohorts import compute_cohorts
from reviews.index.model import CodeIndex, Definition, FileRecord, Reference

__all__ = [
    "CodeIndex",
    "Cohort",
    "Definition",
    "FileRecord",
    "Reference",
    "build_index",
    "changed_texts",
    "compute_cohorts",
    "files_at_commit",
    "files_in_directory",
    "parse_file",
    "update_index",
]
