"""Axes and the verdict of a round; the verdict follows decisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from guardrails.audit import SYSTEM, Target, audit_record
from guardrails.audit import Actor as AuditActor
from reviews.domain import types as t
from reviews.domain.closings import off_target_reason
from reviews.domain.reviewer_precision import with_calibrated
from reviews.domain.verdict import Verdict as DomainVerdict
from reviews.domain.verdict import finalise
from reviews.live.events import emit, emit_list_row
from reviews.models import (
    AxisResult,
    ReviewerStream,
    ReviewNode,
    ReviewRound,
    Verdict,
    VerdictChange,
)
from reviews.selectors import node_view, reviewer_calibrations
from reviews.services.axes import token_axes_record
from reviews.services.check_runs import check_run_enqueue
from reviews.services.flags import space_flag_check


def round_finalise(
    *,
    review_round: ReviewRound,
    reason: str = "review finished",
    actor: Any = None,
    request: Any = None,
    locked: bool = False,
    streams: Sequence[ReviewerStream] | None = None,
    axes: Mapping[t.AxisName, t.AxisResult] | None = None,
    first: bool = False,
) -> Verdict:
    """Decide Ship/Hold/Block from the nodes of EVERY stream of the round, then the axes.

    The one place a verdict is decided, at the end of the pipeline and after every decision
    (`verdict_follow`). Each finding's confidence goes through its reviewer's calibration
    first (docs/domain-rules.md#calibrated-confidence). A change of an existing verdict is
    recorded (VerdictChange and an audit event: old → new, `reason`, `actor`; None is the
    system) and pushed live. `locked`: the caller's transaction already holds the round's row
    (it just wrote it: the finaliser); `streams`: the round's reviewer streams, when the caller
    has read them; `axes`: its axes, when the caller has just written them; `first`: the round
    has no verdict yet (it has just finished, in the caller's transaction), so none is read."""
    # No savepoint inside a caller's transaction (the finaliser's, a decision's): a failure
    # here fails it whole anyway.
    with transaction.atomic(savepoint=False):
        if not locked:
            # Lock the round: two decisions at once must not both read the same old verdict.
            ReviewRound.objects.select_for_update().filter(pk=review_round.pk).first()
        views = _calibrated_views(review_round)
        if axes is None:
            axes = {
                t.AxisName(a.axis): t.AxisResult(a.result)
                for a in AxisResult.objects.filter(round=review_round)
            }
        gated = [t.AxisName(a) for a in review_round.space.workspace.gated_axes or []]
        requirements = _requirements_stream(review_round, streams)
        decided = finalise(
            views,
            axes=axes,
            gated=gated,
            off_target=off_target_reason(requirements.closing if requirements else None),
        )
        decided = DomainVerdict(
            decided.level, decided.rule[:300], decided.confidence, decided.contributing
        )
        verdict, old = _verdict_save(review_round, decided, first=first)
        if old is not None and not decided.same_as(old):
            _record_change(review_round, old, decided, reason=reason, actor=actor, request=request)
        emit(
            review_round.space_id,
            "review.verdict",
            level=decided.level.value,
            previous=old.level.value if old else None,
        )
        # The reviews list shows the verdict and the open counts: its row follows too.
        emit_list_row(review_round.space.workspace_id, review_round.space_id)
        # So does the round's GitHub check (after commit, in a task).
        check_run_enqueue(review_round)
    return verdict


def _calibrated_views(review_round: ReviewRound) -> list[t.NodeView]:
    """The round's findings, each confidence as its reviewer's decisions on other rounds
    measured it (the identity below MIN_CALIBRATION_DECISIONS); the node keeps what it stated.
    The one place the verdict reads calibrated confidence."""
    nodes = list(
        ReviewNode.objects.filter(round=review_round)
        .select_related("stream")
        .prefetch_related("confirmations")
    )
    return with_calibrated(
        [node_view(n, list(n.confirmations.all())) for n in nodes],
        reviewer_calibrations(review_round.space.workspace_id, exclude_round=review_round.pk),
    )


def _requirements_stream(
    review_round: ReviewRound, streams: Sequence[ReviewerStream] | None
) -> ReviewerStream | None:
    """The round's finished requirements reviewer, whose closing may say the change is off
    target: from `streams` when the caller has read them, else read (its closing only)."""
    if streams is None:
        return (
            ReviewerStream.objects.filter(
                round=review_round,
                dimension=t.Dimension.REQUIREMENTS.value,
                state=ReviewerStream.State.DONE,
            )
            .only("closing")
            .first()
        )
    return next(
        (
            s
            for s in sorted(streams, key=lambda s: s.name)  # as `.first()` orders them
            if s.dimension == t.Dimension.REQUIREMENTS.value
            and s.state == ReviewerStream.State.DONE
        ),
        None,
    )


def _verdict_save(
    review_round: ReviewRound, decided: DomainVerdict, *, first: bool
) -> tuple[Verdict, DomainVerdict | None]:
    """Write the decided verdict over the round's previous one, or create it (`first`: there
    is none to read). Returns the row and the previous verdict, if any."""
    previous = None if first else Verdict.objects.filter(round=review_round).first()
    old = (
        DomainVerdict(t.VerdictLevel(previous.level), previous.rule, previous.confidence)
        if previous is not None
        else None
    )
    # The previous verdict was read under the round's lock: write it in place, or create it.
    verdict = previous if previous is not None else Verdict(round=review_round)
    verdict.level, verdict.rule = decided.level.value, decided.rule
    verdict.confidence, verdict.contributing = decided.confidence, list(decided.contributing)
    if previous is None:
        verdict.save(force_insert=True)
    else:
        verdict.save(update_fields=["level", "rule", "confidence", "contributing"])
    return verdict, old


def verdict_follow(
    *,
    review_round: ReviewRound,
    reason: str,
    actor: Any = None,
    request: Any = None,
    decided: bool | None = None,
) -> Verdict | None:
    """Decide the verdict again after a decision, once the round has one. While the pipeline
    still runs there is nothing to follow: its last stage decides with the same rules.
    `decided`: whether the round has a verdict, when the caller read it in the transaction
    it is in (not looked for again)."""
    if decided is None:
        decided = Verdict.objects.filter(round=review_round).exists()
    if not decided:
        return None
    if not review_round.fast_exit:
        # The token axes follow the active findings too (a dismissed finding stops failing
        # its axis).
        token_axes_record(review_round)
    verdict = round_finalise(review_round=review_round, reason=reason, actor=actor, request=request)
    # A decision can make a finished round the second in a row without approval.
    space_flag_check(space=review_round.space_id)
    return verdict


def _record_change(
    review_round: ReviewRound,
    old: DomainVerdict,
    new: DomainVerdict,
    *,
    reason: str,
    actor: Any,
    request: Any,
) -> None:
    who = AuditActor.of(actor) if actor is not None else SYSTEM
    VerdictChange.objects.create(
        round=review_round,
        old_level=old.level.value,
        new_level=new.level.value,
        old_rule=old.rule[:300],
        new_rule=new.rule[:300],
        old_confidence=old.confidence,
        new_confidence=new.confidence,
        reason=reason[:300],
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        actor_label=who.label,
    )
    space = review_round.space
    audit_record(
        action="verdict.changed",
        actor=who,
        workspace=space.workspace,
        target=Target("reviewspace", str(space.pk), str(space.pull_request)),
        payload={
            "round": review_round.number,
            "before": old.level.value,
            "after": new.level.value,
            "before_rule": old.rule,
            "after_rule": new.rule,
            "reason": reason,
        },
        request=request,
    )
