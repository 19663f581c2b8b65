"""Model field choices from the domain's enums."""

from __future__ import annotations


def enum_choices(enum) -> list[tuple[str, str]]:
    return [(m.value, m.value) for m in enum]
