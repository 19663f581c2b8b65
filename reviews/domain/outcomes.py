"""Reviewer outcomes the review manager must handle.

- Process block vs code block: a block raised by the requirements check when nobody wrote down
  the original request is a *process* block — the system asks for the request and re-runs that
  reviewer only; it never counts as a Block of the code.
- Failure: a reviewer that fails is retried once with a reworded or narrowed brief; a second
  failure skips it, and the report names the angle that was not covered.
- Fix loop: after two consecutive rounds without approval the space is flagged for a human.
  The initial review counts as a round: review → fix → re-review, both not approved → flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from .types import ReviewerSpec, VerdictLevel


class BlockKind(StrEnum):
    PROCESS = "process"
    CODE = "code"


def block_kind(*, from_requirements_check: bool, original_request: str | None) -> BlockKind:
    """Classify a reviewer's block: process when requirements cannot be judged at all."""
    has_request = bool(original_request and original_request.strip())
    if from_requirements_check and not has_request:
        return BlockKind.PROCESS
    return BlockKind.CODE


# What a requirements reviewer's stream records (its `error`, state skipped) while it waits for
# the original request: the page asks for the request, the verdict ignores the stream.
PROCESS_BLOCK = "process block: the original request is missing; supply it to run this reviewer"


def is_process_block(error: str) -> bool:
    """Whether a stream's recorded error is the process block (never a failure)."""
    return error == PROCESS_BLOCK


# What the stream of a reviewer the workspace switched off records (its `error`, state skipped)
# when it was asked to run anyway (a follow-up of its dimension): it never reached a model.
DISABLED_BY_WORKSPACE = "disabled by the workspace: not run"


def is_disabled(error: str) -> bool:
    return error == DISABLED_BY_WORKSPACE


def counts_toward_verdict(kind: BlockKind) -> bool:
    """Only a code block may block the change; a process block asks for input instead."""
    return kind is BlockKind.CODE


class FailurePlan(StrEnum):
    RETRY_REWORDED = "retry_reworded"
    SKIP = "skip"


MAX_ATTEMPTS = 2


def after_failure(*, failed_attempts: int) -> FailurePlan:
    """What to do once a reviewer has failed `failed_attempts` times in this round."""
    if failed_attempts < 1:
        raise ValueError("after_failure is for reviewers that failed at least once")
    return FailurePlan.RETRY_REWORDED if failed_attempts < MAX_ATTEMPTS else FailurePlan.SKIP


def uncovered_angle(reviewer: ReviewerSpec, reason: str) -> str:
    """The report line for a reviewer given up on."""
    why = " ".join(reason.split()) or "no usable output"
    return f"The {reviewer.label} angle was not covered: the reviewer failed twice ({why})."


FIX_LOOP_LIMIT = 2


def rounds_without_approval(history: Sequence[VerdictLevel]) -> int:
    """How many of the latest rounds in a row ended without Ship (oldest first in `history`)."""
    count = 0
    for level in reversed(history):
        if level is VerdictLevel.SHIP:
            break
        count += 1
    return count


def needs_human(history: Sequence[VerdictLevel]) -> bool:
    return rounds_without_approval(history) >= FIX_LOOP_LIMIT
