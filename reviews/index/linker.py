"""Turning every file's references into edges between definitions.

Linking always runs over the whole index, even after an incremental update: a changed file can
change what an unchanged file's name refers to (a new definition, a removed re-export, a new
`__init__.py`), and resolution is dictionary look-ups — cheap next to parsing, which is the part
`update_index` avoids repeating.
"""

from __future__ import annotations

from collections.abc import Mapping

from reviews.index.model import FileRecord, Reference, definition_table, resolved_references
from reviews.index.named_resolve import NamedResolver
from reviews.index.python_resolve import PythonResolver


def link(files: Mapping[str, FileRecord]) -> tuple[Reference, ...]:
    """Every reference of every file (ordered by path, then position), with its target."""
    definitions = definition_table(files)
    python = PythonResolver(files, definitions)
    named = NamedResolver(files, definitions)
    ordered = [files[path] for path in sorted(files)]
    targets: dict[tuple[str, int], str | None] = {}
    for record in ordered:
        resolver = python if record.language == "python" else named
        for position, ref in enumerate(record.references):
            target = resolver.resolve(record, ref.kind, ref.source, ref.name)
            if target is not None and target in definitions and target != ref.source:
                targets[(record.path, position)] = target
    return resolved_references(ordered, targets)
