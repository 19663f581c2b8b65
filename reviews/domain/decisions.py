"""What a person's decision on a finding must carry.

Dismissing a finding that decides the verdict (a P0 or a P1) changes what the team is told
about the change, so it needs a reason that others can read on the card and in the report;
anything smaller may be dismissed without one. Resolving (fixed) needs none: the next round
shows whether it is gone.
"""

from __future__ import annotations

from reviews.domain.consensus import Action
from reviews.domain.types import Priority

#: Priorities whose dismissal must say why.
REASON_REQUIRED = frozenset({Priority.P0, Priority.P1})
REASON_MAX = 2000


def reason_problem(action: Action, priority: Priority, reason: str) -> str | None:
    """Why this decision cannot be taken as given, or None."""
    text = reason.strip()
    if len(text) > REASON_MAX:
        return f"A reason is at most {REASON_MAX:,} characters; this one has {len(text):,}."
    if action == Action.DISMISS and priority in REASON_REQUIRED and not text:
        return (
            f"Dismissing a {priority} finding needs a reason: say why it is not a problem "
            "(it is shown on the finding and in the report)."
        )
    return None
