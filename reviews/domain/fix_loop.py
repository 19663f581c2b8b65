"""The fix loop's two rules: what an agent is told to do next, and whether a new round may start.

A producer (a coding agent or a person) reads the findings, pushes a fix and asks again; after
two rounds without approval the review is flagged for a person. The flag comes first in both
rules: once a review waits for a person, nothing tells an agent to ask again, and an agent's new
round on a head that was already reviewed is refused. The same head is never reviewed twice on
an agent's say-so unless what it is checked against (the original request) changed; a person
may always ask.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from reviews.domain.types import VerdictLevel

#: Words the answers use when they tell an agent to start another round.
ASK_AGAIN = "request_review"


@dataclass(frozen=True, slots=True)
class LoopState:
    """What `next_step` reads of a review's shown round."""

    round_finished: bool
    flagged: bool
    flag_reason: str = ""
    waiting_for_request: bool = False  # a requirements reviewer's process block
    verdict: VerdictLevel | None = None
    verdict_rule: str = ""
    fix_list: bool = False  # open P0/P1 findings to fix


def next_step(state: LoopState) -> str:
    """One sentence for the agent, in the order the rules rank: the flag first."""
    if state.flagged:
        reason = (state.flag_reason or "it needs a person's decision").rstrip(".")
        return (
            f"This review is flagged for a person: {reason}. Do not request another round; "
            "tell your user, who decides in Quorum."
        )
    if not state.round_finished:
        return "The round is still running: wait_for_review."
    if state.waiting_for_request:
        # A question for the agent's person, not a code verdict.
        return (
            "Quorum needs the original request (the task or issue this change implements) to "
            "check the change against it: ask your user for it, then call "
            f"{ASK_AGAIN} again with original_request."
        )
    if state.verdict in (VerdictLevel.BLOCK, VerdictLevel.HOLD):
        if state.fix_list:
            return f"Fix the findings in fix_list, push the change, then call {ASK_AGAIN} again."
        # No finding to fix: an axis or a process decided it (e.g. a public API removed).
        return (
            f"The verdict rests on: {state.verdict_rule}. Nothing in fix_list: decide with your "
            "user whether the change is intended; a person can accept it in Quorum."
        )
    if state.verdict is VerdictLevel.SHIP:
        return "Ship: a person may publish the review (publish_review_to_github asks them)."
    return "Read the open findings (list_review_nodes) and decide with your user."


@dataclass(frozen=True, slots=True)
class Admission:
    """Whether a requested round may start; `reason` says why not, for the requester."""

    allowed: bool
    reason: str = ""


def admit_round(
    *,
    head_sha: str,
    reviewed_heads: Collection[str],
    flagged: bool,
    by_person: bool,
    request_changed: bool,
) -> Admission:
    """May a new round start on `head_sha`? `reviewed_heads`: heads of the review's finished
    rounds. A person always may; an agent needs a new head, or (unless the review is flagged)
    a changed original request."""
    if by_person or head_sha not in reviewed_heads:
        return Admission(True)
    short = head_sha[:10]
    if flagged:
        return Admission(
            False,
            f"This review is flagged for a person and head {short} was already reviewed: push "
            "a new commit, or ask a person to start a round in Quorum.",
        )
    if request_changed:
        return Admission(True)
    return Admission(
        False,
        f"Head {short} was already reviewed and nothing it is checked against changed: push "
        "a fix first (or give a new original_request), or ask a person to re-run it.",
    )
