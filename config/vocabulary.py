"""The domain's enums in template contexts.

Templates compare with enum members (`{% if round.state == RoundState.FAILED %}`), never with
a spelled-out status (tests/test_vocabulary_literals.py checks). A template calls whatever is
callable, and an Enum class is (with no argument, so the lookup fails quietly); a namespace of
the members is not.
"""

from __future__ import annotations

from enum import Enum
from types import SimpleNamespace


def template_enums(**enums: type[Enum]) -> dict[str, SimpleNamespace]:
    """`template_enums(RoundState=RoundState)` → {"RoundState": namespace of its members}."""
    return {
        name: SimpleNamespace(**{member.name: member for member in enum})
        for name, enum in enums.items()
    }
