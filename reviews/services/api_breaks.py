"""A person accepts the API breaks of a round (reviews/domain/api_breaks.py): the one
service function for that decision."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from guardrails.audit import Actor as AuditActor
from guardrails.audit import Target, audit_record
from reviews.domain import api_breaks as rules
from reviews.domain import types as t
from reviews.models import AxisResult, ReviewRound
from reviews.services.axes import axis_record
from reviews.services.verdicts import verdict_follow


def api_breaks_accept(
    *, review_round: ReviewRound, user: Any, reason: str, request: Any = None
) -> AxisResult:
    """Accept the breaks the round's apiContract axis found, with a reason (audited); the axis
    warns and the verdict is decided again. The caller checked the triage permission; an
    agent's token is refused here, since accepting a break is a person's word."""
    if getattr(user, "quorum_agent", ""):
        raise ApplicationError(
            "An agent cannot accept an API break: a person does, on the page or with their "
            "own token.",
            code=ErrorCode.AGENT_CANNOT_ACCEPT,
            http_status=403,
        )
    reason = " ".join((reason or "").split())
    if not reason:
        raise ApplicationError(
            "Say why the break is intended (who relies on this API, and what they were told).",
            code=ErrorCode.REASON_REQUIRED,
        )
    if len(reason) > rules.REASON_MAX:
        raise ApplicationError(
            f"The reason is {len(reason)} characters; at most {rules.REASON_MAX}.",
            code=ErrorCode.REASON_TOO_LONG,
        )
    with transaction.atomic():
        row = (
            AxisResult.objects.select_for_update()
            .filter(round=review_round, axis=t.AxisName.API_CONTRACT.value)
            .first()
        )
        wheres = rules.breaking(row.details) if row is not None else []
        if row is None or row.result != t.AxisResult.FAIL.value or not wheres:
            raise ApplicationError(
                f"Round {review_round.number} has no API break to accept.",
                code=ErrorCode.NO_API_BREAK,
                http_status=409,
            )
        newest = review_round.space.rounds.order_by("-number").values_list("number", flat=True)
        if newest.first() != review_round.number:
            raise ApplicationError(
                f"Round {review_round.number} is not the newest: accept the breaks of the "
                "round that decides the verdict.",
                code=ErrorCode.ROUND_SUPERSEDED,
                http_status=409,
            )
        person = user.email or user.get_username()
        result, details = rules.accepted(
            row.details, by=person, reason=reason, at=timezone.now().isoformat()
        )
        row = axis_record(
            review_round=review_round,
            axis=t.AxisName.API_CONTRACT,
            result=result,
            source=row.source,
            details=details,
            submitted_by=user,
        )
        audit_record(
            action="api.break_accepted",
            actor=AuditActor.of(user),
            workspace=review_round.space.workspace,
            target=Target.of(review_round, f"round {review_round.number}"),
            payload={
                "space": review_round.space_id,
                "round": review_round.number,
                "breaks": wheres[:50],
                "reason": reason,
            },
            request=request,
        )
        verdict_follow(
            review_round=review_round,
            reason=f"API break accepted by {person}: {reason[:200]}",
            actor=user,
            request=request,
        )
    return row
