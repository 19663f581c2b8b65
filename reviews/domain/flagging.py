"""Two rounds, then a person: when automatic review does not converge, people decide.

A pull request whose finished rounds keep ending without approval (verdict Hold → GitHub
CHANGES_REQUESTED, Block → BLOCKED) is going round in circles: after `ROUND_LIMIT` such rounds
in a row the review is flagged for a person. A Ship verdict (APPROVED) breaks the run. Rounds a
person already looked at when clearing the flag (`seen_through`) do not count again, so a
cleared flag comes back only after another `ROUND_LIMIT` rounds without approval.

Only finished rounds count: a failed, cancelled or superseded round ended no review.
"""

from __future__ import annotations

from collections.abc import Sequence

ROUND_LIMIT = 2

_ENDED = {"hold": "changes requested (Hold)", "block": "blocked (Block)"}


def rounds_without_approval(
    outcomes: Sequence[tuple[int, str]], *, seen_through: int = 0
) -> list[tuple[int, str]]:
    """The run of rounds since the last approval, oldest first: `outcomes` are the finished
    rounds as (number, verdict level) in any order."""
    run: list[tuple[int, str]] = []
    for number, level in sorted(outcomes):
        if number <= seen_through:
            continue
        run = [] if level == "ship" else [*run, (number, level)]
    return run


def flag_reason(outcomes: Sequence[tuple[int, str]], *, seen_through: int = 0) -> str | None:
    """Why the review needs a person now, in words, or None while it does not."""
    run = rounds_without_approval(outcomes, seen_through=seen_through)
    if len(run) < ROUND_LIMIT:
        return None
    ended = "; ".join(f"round {n}: {_ENDED.get(level, level)}" for n, level in run)
    return (
        f"{len(run)} rounds in a row ended without approval ({ended}). Automatic review is not "
        "converging: a person should look at this pull request and decide."
    )
