"""An exported name as the API-surface readers record it (`Export`: kind, parameter types, result
type, overloads) and the surface they build of it. It sits below the per-language readers
(api_go, api_typescript) and the comparison in api_surface, so each of them can build and read
exports without importing the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Export:
    """One exported name. `params`: one normalised type per parameter, `?` suffix when
    optional, `...` prefix when variadic; None for things that are not callable."""

    kind: str
    params: tuple[str, ...] | None = None
    returns: str = ""
    overloads: tuple[Export, ...] = ()  # TypeScript overload signatures, in order

    @property
    def signature(self) -> str:
        if self.overloads:
            return " & ".join(o.signature for o in self.overloads)
        if self.params is None:
            return self.returns
        tail = f" -> {self.returns}" if self.returns else ""
        return f"({', '.join(self.params)}){tail}"


#: where → export; `where` is `path:Name` (JS/TS module) or `dir:Name` (Go package).
Surface = Mapping[str, Export]


def with_overload(existing: Export | None, new: Export) -> Export:
    """Two declarations of one callable name are overloads: both are kept."""
    if (
        existing is None
        or (existing.params is None and not existing.overloads)
        or new.params is None
    ):
        return new
    return Export(new.kind, None, "", (*(existing.overloads or (existing,)), new))
