"""Turning files' references into edges between definitions.

A full build links every file. An update links again only the files whose references can
resolve differently (see `relink`): a changed file can change what an unchanged file's name
refers to (a new definition, a removed re-export, a new `__init__.py`), so while linking a
file the linker notes every table key its references read (`link_reads`), and an update
compares those keys with the ones the changed files altered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from reviews.index.link_reads import key_hash
from reviews.index.model import Definition, FileRecord, Reference, definition_table, with_target
from reviews.index.named_resolve import NamedResolver
from reviews.index.python_resolve import PythonResolver

Depends = Mapping[str, frozenset[int]]  # file → the keys its references read (`key_hash`)


class Linked(NamedTuple):
    references: tuple[Reference, ...]  # ordered by path, then position in the file
    depends: Depends
    definitions: dict[str, Definition]  # the table they were resolved against


def link(files: Mapping[str, FileRecord]) -> Linked:
    """Every reference of every file with its target, and what each file's resolution read."""
    definitions = definition_table(files)
    linked, depends = link_files(files, definitions, sorted(files))
    references = tuple(ref for path in sorted(files) for ref in linked[path])
    return Linked(references, depends, definitions)


def link_files(
    files: Mapping[str, FileRecord],
    definitions: Mapping[str, Definition],
    paths: Iterable[str],
    python: PythonResolver | None = None,
) -> tuple[dict[str, tuple[Reference, ...]], dict[str, frozenset[int]]]:
    """The references of the files at `paths`, resolved against the whole index."""
    if python is None:
        python = PythonResolver(files, definitions, [])
    log = python.log
    assert log is not None, "the Python resolver must note what it reads"
    named: NamedResolver | None = None
    linked: dict[str, tuple[Reference, ...]] = {}
    depends: dict[str, frozenset[int]] = {}
    for path in paths:
        record = files[path]
        if record.language == "python":
            resolver: PythonResolver | NamedResolver = python
        else:
            if named is None:
                named = NamedResolver(files, definitions)
                named.track(log)
            resolver = named
        out = []
        for ref in record.references:
            target = resolver.resolve(record, ref.kind, ref.source, ref.name)
            if target is not None:
                log.append(target)  # the check below reads the table too
            if target is not None and target in definitions and target != ref.source:
                out.append(with_target(ref, target))
            else:
                out.append(ref)
        linked[path] = tuple(out)
        depends[path] = frozenset(map(key_hash, set(log)))
        log.clear()
    return linked, depends
