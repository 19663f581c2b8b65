"""What several review views share: the round a URL or a form names, the space of a member's
workspace, and the message saying what the guardrails checkpoint did with an action."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from guardrails.rules import CheckpointOutcome
from guardrails.services.checkpoint import CheckpointResult
from reviews.models import (
    ReviewRound,
    ReviewSpace,
)
from reviews.selectors import (
    space_get_for_user,
)
from workspaces.models import Membership
from workspaces.rules import RuleError


def checkpoint_message(
    request: HttpRequest, result: CheckpointResult, *, asked: str, done: str
) -> None:
    """What the checkpoint did with a person's action, as the message the next page shows."""
    if result.outcome is CheckpointOutcome.REFUSED:
        messages.error(request, result.reason)
    elif result.outcome is CheckpointOutcome.PENDING:
        number = f" #{result.request.pk}" if result.request else ""
        messages.success(request, f"{asked}{number} is waiting for an approver.")
    else:
        messages.success(request, done)


def round_param(request: HttpRequest) -> int | None:
    """`?round=N` from the switcher; a malformed one is a 400, an unknown one a 404."""
    raw = request.GET.get("round", "")
    if not raw:
        return None
    if not raw.isdigit() or len(raw) > 9:
        raise RuleError(f"“{raw[:40]}” is not a round number: use ?round=1, ?round=2, …")
    return int(raw)


def space_or_404(membership: Membership, space_id: int) -> ReviewSpace:
    return space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)


def posted_round(request: HttpRequest, space: ReviewSpace) -> ReviewRound | None:
    """The round a form names (`round`, its number), else the newest."""
    raw = request.POST.get("round", "")
    rounds = space.rounds.order_by("-number")
    if raw.isdigit() and len(raw) < 10:
        return get_object_or_404(rounds, number=int(raw))
    return rounds.first()
