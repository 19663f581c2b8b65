"""What GitHub shows for a round: the `Quorum` check run (an app) or commit status (a token).

Pure: from the round's state, its verdict and the repository's Hold setting to the fields
GitHub receives. The service (reviews/services/check_runs.py) posts them.

    queued/running  → in_progress, summary says what runs
    finished        → completed: Ship → success, Hold → neutral (or failure when the repository
                      says Hold fails), Block → failure; summary is the report's verdict section
    superseded      → completed, neutral: a newer push is reviewed instead
    cancelled       → completed, cancelled;  failed → completed, neutral (no verdict)
"""

from __future__ import annotations

from dataclasses import dataclass

from .briefs import one_line
from .round_states import RoundState
from .types import VerdictLevel

CHECK_NAME = "Quorum"
STATUS_CONTEXT = "quorum"
SUMMARY_LIMIT = 65_535  # GitHub refuses a longer check run summary
DESCRIPTION_LIMIT = 140  # GitHub refuses a longer commit status description


@dataclass(frozen=True, slots=True)
class CheckState:
    """A check run's fields; `conclusion` is None exactly while it is in progress."""

    status: str  # in_progress | completed
    conclusion: str | None
    title: str
    summary: str
    # The `quorum` commit status a token-only setup posts instead: pending, success, failure
    # or error (a commit status has no neutral; a review that failed must not pass as one).
    status_state: str = "pending"

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    def fields(self, details_url: str = "") -> dict[str, object]:
        """The JSON GitHub's create and update endpoints take."""
        out: dict[str, object] = {
            "status": self.status,
            "output": {"title": self.title, "summary": self.summary},
        }
        if self.conclusion is not None:
            out["conclusion"] = self.conclusion
        if details_url:
            out["details_url"] = details_url
        return out


def conclusion_for(level: VerdictLevel, *, hold_fails: bool) -> str:
    if level is VerdictLevel.SHIP:
        return "success"
    if level is VerdictLevel.BLOCK:
        return "failure"
    return "failure" if hold_fails else "neutral"


def _clip(text: str) -> str:
    if len(text) <= SUMMARY_LIMIT:
        return text
    tail = "\n\n… (cut: the full report is on the review page)"
    return text[: SUMMARY_LIMIT - len(tail)] + tail


def check_state(
    *,
    state: RoundState,
    round_number: int,
    verdict: VerdictLevel | None,
    verdict_section: str,
    hold_fails: bool,
    running: str = "",
    superseded_by: int | None = None,
    error: str = "",
) -> CheckState:
    """The check run a round in `state` shows. `verdict_section` is the report's (used once
    the round finished with a verdict); `running` says what the round runs."""
    if state in (RoundState.PENDING, RoundState.RUNNING):
        return CheckState(
            "in_progress",
            None,
            f"Round {round_number} is reviewing this commit",
            _clip(running or f"Round {round_number} is {state.label.lower()}."),
            "pending",
        )
    if state is RoundState.FINISHED and verdict is not None:
        conclusion = conclusion_for(verdict, hold_fails=hold_fails)
        return CheckState(
            "completed",
            conclusion,
            f"{verdict.value.capitalize()} (round {round_number})",
            # GitHub refuses an empty summary: the verdict's own words if the section is blank.
            _clip(verdict_section.strip() or f"Verdict: {verdict.value.capitalize()}."),
            "failure" if conclusion == "failure" else "success",
        )
    if state is RoundState.SUPERSEDED:
        newer = f"round {superseded_by}" if superseded_by else "a newer round"
        return CheckState(
            "completed",
            "neutral",
            f"Round {round_number} superseded",
            f"A newer push is reviewed by {newer}; this round gives no verdict.",
            "success",
        )
    if state is RoundState.CANCELLED:
        return CheckState(
            "completed",
            "cancelled",
            f"Round {round_number} cancelled",
            _clip(one_line(error, 1000) or "The round was cancelled; it gives no verdict."),
            "error",
        )
    # Failed (or finished without a verdict, which the pipeline never leaves): no verdict.
    return CheckState(
        "completed",
        "neutral",
        f"Round {round_number} did not finish",
        _clip(
            "The review failed before it reached a verdict"
            + (f": {one_line(error, 1000)}" if error else ".")
            + " Re-run it from the review page."
        ),
        "error",
    )


def commit_status(check: CheckState) -> tuple[str, str]:
    """(state, description) of the `quorum` commit status for a token-only setup."""
    description = check.title
    if len(description) > DESCRIPTION_LIMIT:
        description = description[: DESCRIPTION_LIMIT - 1] + "…"
    return check.status_state, description
