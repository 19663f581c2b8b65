"""Admitting waiting rounds into work, a bounded number at once (reviews/domain/admission.py
decides which; this counts and writes under a lock), and what the sweeper counts as a
coordinator's message still queued.

A round is admitted by its move from queued (`pending`) to `running`, so a waiting round shows
as queued on its page and in its JSON, and a push or a cancel ends it as any queued round.
The move is decided and written under one lock (the `admission` row of PipelineSweep, taken
FOR UPDATE), so two coordinators admitting at once never pass the bound between them. A crash
rolls the transaction back: nothing is admitted half.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from reviews.domain.admission import admit, message_overdue
from reviews.domain.step_states import TERMINAL
from reviews.models import PipelineStep, PipelineSweep, ReviewRound
from reviews.pipeline.step_writes import step_lease
from reviews.services.rounds import round_transition

log = logging.getLogger(__name__)
TURN = "admission"
#: Waiting rounds read per admission at most when there is no bound.
UNBOUNDED_BATCH = 100
TERMINAL_STEP_STATES = tuple(s.value for s in TERMINAL)


def rounds_admit(candidate: ReviewRound | None = None) -> tuple[bool, list[int]]:
    """Admit the oldest waiting rounds into the free places. Returns whether `candidate` (a
    round whose coordinator is asking; it says `running` afterwards when this admitted it) is
    running now, and the other rounds admitted, which the caller sends a coordinator."""
    bound = settings.QUORUM_ROUNDS_AT_ONCE
    with transaction.atomic():
        PipelineSweep.objects.get_or_create(name=TURN, defaults={"next_at": timezone.now()})
        PipelineSweep.objects.select_for_update().filter(name=TURN).first()
        running = ReviewRound.objects.filter(state=ReviewRound.State.RUNNING).count()
        free = bound - running if bound > 0 else UNBOUNDED_BATCH
        waiting: list[int] = []
        if free > 0:
            waiting = list(
                ReviewRound.objects.filter(state=ReviewRound.State.PENDING)
                .order_by(Coalesce("queued_since", "created_at"), "pk")
                .values_list("pk", flat=True)[:free]
            )
        admitted: list[int] = []
        for review_round in ReviewRound.objects.filter(
            pk__in=admit(running, waiting, bound)
        ).order_by(Coalesce("queued_since", "created_at"), "pk"):
            if candidate is not None and review_round.pk == candidate.pk:
                review_round = candidate
            # Conditional: a round cancelled or superseded since it was read stays so.
            if round_transition(review_round, ReviewRound.State.RUNNING):
                admitted.append(review_round.pk)
    if candidate is None:
        return False, admitted
    others = [pk for pk in admitted if pk != candidate.pk]
    is_running = candidate.pk in admitted or (
        ReviewRound.objects.filter(pk=candidate.pk, state=ReviewRound.State.RUNNING).exists()
    )
    return is_running, others


def admit_waiting(dispatch: Callable[[str, int], None]) -> int:
    """Admit what has room and send each admitted round its coordinator (a round that ended,
    the sweeper). Returns how many were admitted."""
    _, admitted = rounds_admit()
    for round_id in admitted:
        dispatch("advance", round_id)
    if admitted:
        log.info("admitted %s waiting round(s)", len(admitted))
    return len(admitted)


def advance_sent(round_id: int) -> datetime:
    """A coordinator's message for the round is about to be published: its stamp, which the
    message carries."""
    stamp = timezone.now()
    ReviewRound.objects.filter(pk=round_id).update(advance_sent_at=stamp)
    return stamp


def advance_not_sent(round_id: int, stamp: datetime) -> None:
    """The broker refused it: nothing is queued, the sweeper may send it at its next look."""
    ReviewRound.objects.filter(pk=round_id, advance_sent_at=stamp).update(advance_sent_at=None)


def advance_taken(round_id: int, stamp: datetime) -> None:
    """A coordinator took the message stamped `stamp`: the round has no message queued unless
    one was sent after it (stamped later: it stays counted)."""
    ReviewRound.objects.filter(pk=round_id, advance_sent_at__lte=stamp).update(advance_sent_at=None)


def messages_queued() -> int:
    """The pipeline's messages sent and not yet taken, as the rows say: steps of open rounds
    waiting for a worker, and coordinators' messages."""
    open_states = (ReviewRound.State.PENDING, ReviewRound.State.RUNNING)
    steps = PipelineStep.objects.filter(
        state=PipelineStep.State.PENDING, round__state__in=open_states
    ).count()
    rounds = ReviewRound.objects.filter(
        Q(state__in=open_states), advance_sent_at__isnull=False
    ).count()
    return steps + rounds


def stalled_rounds() -> list[int]:
    """Admitted rounds nobody is moving: no live coordinator lease, either a step that went
    stale (its worker died, or its task never reached a worker) or no live step at all, and
    no coordinator's message still waiting its turn: none was sent (lost with a broker's data,
    or never published), or it has waited longer than the queue explains
    (reviews/domain/admission.py `message_overdue`). Queued rounds are not stalled: they wait
    for a place (`recover` admits them when one is free)."""
    now = timezone.now()
    lease = step_lease()
    open_steps = PipelineStep.objects.filter(round=OuterRef("pk")).exclude(
        state__in=TERMINAL_STEP_STATES
    )
    live = Q(state=PipelineStep.State.RUNNING, lease_until__gte=now) | Q(
        state=PipelineStep.State.PENDING, updated_at__gte=now - lease
    )
    rows = list(
        ReviewRound.objects.filter(state=ReviewRound.State.RUNNING)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .filter(Exists(open_steps.exclude(live)) | ~Exists(open_steps.filter(live)))
        .order_by("pk")
        .values_list("pk", "advance_sent_at")
    )
    if not rows:
        return []
    queued = messages_queued() if any(sent for _, sent in rows) else 0
    cap = lease.total_seconds()
    return [
        pk
        for pk, sent in rows
        if message_overdue(None if sent is None else (now - sent).total_seconds(), queued, cap=cap)
    ]
