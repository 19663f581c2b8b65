"""A person accepting the breaks the apiContract axis found (pure).

An intended break the manifest does not announce (a library before 1.0 that documents it, an
internal-only consumer, a deprecation that ran its course) is accepted by a person with the
triage role, with a reason. The breaks stay listed, marked `accepted`, the axis warns instead
of failing, and the verdict follows. The acceptance covers the breaks it was given: a round
re-decided with the same breaks keeps it; one with a new break needs a person again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reviews.domain.types import AxisResult

#: The longest reason kept.
REASON_MAX = 1000


def breaking(details: Mapping[str, Any]) -> list[str]:
    """Where the axis found breaks (`where` of each breaking change), in its order."""
    return [c["where"] for c in details.get("changes", []) if c.get("severity") == "breaking"]


def accepted(
    details: Mapping[str, Any], *, by: str, reason: str, at: str
) -> tuple[AxisResult, dict[str, Any]]:
    """The axis after a person accepted its breaks: each breaking change marked `accepted`,
    who, why and when recorded, the result a warning."""
    wheres = breaking(details)
    changes = [
        {**c, "severity": "accepted"} if c.get("severity") == "breaking" else dict(c)
        for c in details.get("changes", [])
    ]
    acceptance = {"by": by, "reason": reason[:REASON_MAX], "at": at, "breaks": wheres}
    return AxisResult.WARN, {**details, "changes": changes, "accepted": acceptance}


def carried(
    previous: Mapping[str, Any] | None, details: Mapping[str, Any]
) -> tuple[AxisResult, dict[str, Any]] | None:
    """The same acceptance on a recomputed axis when it still covers every break; None when
    there was none, or a break it did not cover appeared."""
    acceptance = (previous or {}).get("accepted")
    wheres = breaking(details)
    if not acceptance or not wheres or not set(wheres) <= set(acceptance.get("breaks", [])):
        return None
    return accepted(details, by=acceptance["by"], reason=acceptance["reason"], at=acceptance["at"])
