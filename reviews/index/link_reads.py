"""Look-up tables that note every key read, so linking can say what each file's references
depended on.

An incremental update re-resolves only the references whose reads include a key a changed file
altered. A failed look-up is noted as well as a found one: a definition added later under that
name changes the answer.
"""

from __future__ import annotations

import zlib
from typing import Any

ReadKey = str | tuple[str, ...]


def key_hash(key: ReadKey) -> int:
    """A key as the index keeps it: 32 bits, the same in every process (it is stored), smaller
    than the key. Two keys of one hash only make an update link a file more."""
    text = key if isinstance(key, str) else "\x1f".join(key)
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


class TrackedDict(dict[Any, Any]):
    """A dict whose `get`, `[]` and `in` append the key to `log`."""

    __slots__ = ("_note",)

    def __init__(self, data: Any, log: list[ReadKey]) -> None:
        super().__init__(data)
        self._note = log.append

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return dict.get(self, key, default)

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        self._note(key)  # type: ignore[arg-type]
        return dict.__contains__(self, key)


class TrackedSet(set[Any]):
    """A set whose `in` appends the key to `log`."""

    __slots__ = ("_note",)

    def __init__(self, data: Any, log: list[ReadKey]) -> None:
        super().__init__(data)
        self._note = log.append

    def __contains__(self, key: object) -> bool:
        self._note(key)  # type: ignore[arg-type]
        return set.__contains__(self, key)
