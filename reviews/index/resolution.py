"""How much of a repository's own import graph the index resolved.

An import of the repository's own code (see `NamedResolver.is_own_import`) that names no indexed
file or definition is a hole in the graph: cohorts list such imports of their files instead of
pretending the change is unconnected, and the index benchmark reports the rate per language.
Imports of dependencies (npm packages, other Go modules, the JDK, other crates) are not counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from reviews.domain.indexed_files import LANGUAGE_FAMILY
from reviews.index.model import IMPORT, CodeIndex
from reviews.index.named_resolve import NamedResolver


@dataclass(frozen=True, slots=True)
class ImportResolution:
    resolved: int
    total: int  # imports of the repository's own code

    @property
    def rate(self) -> float:
        return self.resolved / self.total if self.total else 1.0


def import_resolution(index: CodeIndex) -> dict[str, ImportResolution]:
    """Language family (`js`, `go`, `java`, `rust`, `python`) → own imports resolved ÷ all."""
    resolver = NamedResolver(index.files, index.definitions)
    tops = _python_tops(index)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ref in index.references:
        if ref.kind != IMPORT:
            continue
        record = index.files[ref.path]
        family = LANGUAGE_FAMILY.get(record.language)
        if family is None:
            continue
        if family == "python":
            own = ref.target is not None or _python_own(tops, ref.name)
        else:
            own = resolver.is_own_import(record, ref.name)
        if own:
            counts[family][1] += 1
            counts[family][0] += ref.target is not None
    return {family: ImportResolution(r, t) for family, (r, t) in sorted(counts.items())}


class ResolverCache:
    """One resolver (and the Python package roots) for an index, built on first use: cohorts
    ask for each of theirs, and building one walks every file."""

    def __init__(self, index: CodeIndex) -> None:
        self.index = index
        self._resolver: NamedResolver | None = None
        self._tops: frozenset[str] | None = None

    @property
    def resolver(self) -> NamedResolver:
        if self._resolver is None:
            self._resolver = NamedResolver(self.index.files, self.index.definitions)
        return self._resolver

    @property
    def python_tops(self) -> frozenset[str]:
        if self._tops is None:
            self._tops = _python_tops(self.index)
        return self._tops


def unresolved_imports(
    index: CodeIndex, paths: Iterable[str], cache: ResolverCache | None = None
) -> tuple[str, ...]:
    """`path: specifier` for each import of the repository's own code in `paths` that the
    index could not resolve, in path order, each once."""
    cache = cache if cache is not None and cache.index is index else ResolverCache(index)
    out: list[str] = []
    for path in sorted(set(paths)):
        record = index.files.get(path)
        family = LANGUAGE_FAMILY.get(record.language) if record is not None else None
        if record is None or family is None:
            continue
        for ref in index.references_by_path.get(path, ()):
            if ref.kind != IMPORT or ref.target is not None:
                continue
            if family == "python":
                own = _python_own(cache.python_tops, ref.name)
            else:
                own = cache.resolver.is_own_import(record, ref.name)
            entry = f"{path}: {ref.name.partition('#')[0]}"
            if own and entry not in out:
                out.append(entry)
    return tuple(out)


def _python_tops(index: CodeIndex) -> frozenset[str]:
    return frozenset(
        r.module.split(".", 1)[0] for r in index.files.values() if r.language == "python"
    )


def _python_own(tops: frozenset[str], name: str) -> bool:
    """A Python import is the repository's own when its top-level package is indexed."""
    return name.startswith(".") or name.split(".", 1)[0] in tops
