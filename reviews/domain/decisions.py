"""What a person's decision on a finding must carry.

Dismissing a finding that decides the verdict (a P0 or a P1) changes what the team is told
about the change, so it needs a reason that others can read on the card and in the report;
anything smaller may be dismissed without one. Resolving (fixed) needs none: the next round
shows whether it is gone.

A workspace may go further and keep the dismissal of a P0 — a finding that blocks on its own —
for the people who may approve what goes out (the approver role and above): anyone else is
refused, whatever the reason they give.
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


#: Priorities whose dismissal a workspace may keep for approvers.
APPROVER_ONLY = frozenset({Priority.P0})


def needs_approver(action: Action, priority: Priority, *, approver_rule: bool) -> bool:
    """Whether the workspace's rule that dismissing a P0 needs an approver (`approver_rule`)
    applies to this decision."""
    return approver_rule and action == Action.DISMISS and priority in APPROVER_ONLY


def approver_problem(
    action: Action, priority: Priority, *, approver_rule: bool, is_approver: bool
) -> str | None:
    """Why this person may not take this decision under that rule, or None. `is_approver`:
    the person's role may decide approval requests, the same check as approving a publish."""
    if needs_approver(action, priority, approver_rule=approver_rule) and not is_approver:
        return (
            f"Dismissing a {priority} finding needs an approver in this workspace: ask an "
            "approver, an admin or an owner to dismiss it, or resolve it once it is fixed."
        )
    return None
