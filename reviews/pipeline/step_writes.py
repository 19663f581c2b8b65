"""Writing a pipeline step's state: the one writer of `PipelineStep.state`, a run's outcome
written only while its claim holds, the outcomes of steps run together written in one
statement per state (a value per step from services/batched.py where their values differ), and
the heartbeat that keeps a running step's lease. The coordinator (runner.py) decides what runs;
this is how it is recorded."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from datetime import timedelta
from functools import reduce
from operator import or_
from typing import Any, Protocol

from django.conf import settings
from django.db import connections
from django.db.models import Field, JSONField, Q, TextField
from django.utils import timezone

from reviews.domain.step_states import StepState, sources_of
from reviews.models import PipelineStep
from reviews.pipeline.faults import CONNECTION_ERRORS, reset_connection, retry_db
from reviews.services.batched import value_per_row

log = logging.getLogger(__name__)


def step_lease() -> timedelta:
    return timedelta(seconds=settings.QUORUM_STEP_LEASE_SECONDS)


def step_transition(step_id: int | Sequence[int], to: StepState, claim: Q, **fields: Any) -> int:
    """The only writer of PipelineStep.state: moves the step (or each of several steps, in one
    statement) to `to` if the table in reviews/domain/step_states.py allows it from the state
    it is in now and `claim` (the attempt or lease the caller holds) still matches, with the
    columns that go with the move. Returns the number of steps moved."""
    sources = [s.value for s in sources_of(to)]
    ids = [step_id] if isinstance(step_id, int) else list(step_id)
    return PipelineStep.objects.filter(claim, pk__in=ids, state__in=sources).update(
        state=to.value, **fields
    )


@contextmanager
def heartbeat(renew: Callable[[], None], name: str):
    """Renew a lease while work runs: only work whose worker died goes stale. A beat that
    loses the database reconnects on the next one instead of dying (which would let the lease
    lapse under a live worker and start a duplicate)."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.QUORUM_STEP_LEASE_SECONDS / 3):
                try:
                    renew()
                except CONNECTION_ERRORS as exc:
                    log.warning("%s: lease not renewed (%s); trying again", name, exc)
                    reset_connection()
                finally:
                    connections.close_all()  # not held (a pool's) between beats
        finally:
            connections.close_all()

    thread = threading.Thread(target=beat, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def step_finish(
    step: PipelineStep, attempt: int, state: str, *, error: str = "", result: dict | None = None
) -> bool:
    """Record the outcome if the claim is still ours; False when another run took the step over
    (its lease lapsed while the database was away): that run records its own outcome."""

    def write() -> int:
        # One conditional statement: atomic by itself.
        return step_transition(
            step.pk,
            StepState(state),
            Q(state=PipelineStep.State.RUNNING, attempts=attempt),
            error=error[:2000],
            result=result or {},
            lease_until=None,
        )

    if retry_db(write, what=f"finishing step {step.pk}") == 1:
        return True
    log.warning("step %s was taken over by another run; its outcome is that run's", step.pk)
    return False


class Finish(Protocol):
    def __call__(
        self,
        step: PipelineStep,
        attempt: int,
        state: str,
        *,
        error: str = "",
        result: dict | None = None,
    ) -> bool: ...


class BatchOutcomes:
    """The outcomes of steps run together (run_inline), recorded once every one of them has
    run: one statement per outcome state rather than one per step. Each is still conditional
    on the step's claim (its attempt), as `step_finish` writes it; until then the main thread keeps
    the leases of the steps that ended (`renew`), as their own heartbeats did while they ran."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: list[tuple[int, int, str, str, dict]] = []

    def __call__(
        self,
        step: PipelineStep,
        attempt: int,
        state: str,
        *,
        error: str = "",
        result: dict | None = None,
    ) -> bool:
        with self._lock:
            self._rows.append((step.pk, attempt, state, error[:2000], result or {}))
        return True

    def renew(self) -> None:
        with self._lock:
            rows = list(self._rows)
        claims = [Q(pk=pk, attempts=attempt) for pk, attempt, *_ in rows]
        if claims:
            PipelineStep.objects.filter(
                reduce(or_, claims), state=PipelineStep.State.RUNNING
            ).update(lease_until=timezone.now() + step_lease())

    def write(self) -> None:
        with self._lock:
            rows, self._rows = self._rows, []
        for state in dict.fromkeys(row[2] for row in rows):
            of_state = [row for row in rows if row[2] == state]
            ids = [pk for pk, *_ in of_state]
            claim = reduce(or_, (Q(pk=pk, attempts=attempt) for pk, attempt, *_ in of_state))
            fields = {
                "error": per_step(of_state, 3, TextField()),
                "result": per_step(of_state, 4, JSONField()),
            }

            def write(ids=ids, claim=claim, fields=fields, state=state) -> int:
                return step_transition(
                    ids,
                    StepState(state),
                    Q(state=PipelineStep.State.RUNNING) & claim,
                    lease_until=None,
                    **fields,
                )

            moved = retry_db(write, what=f"finishing steps {ids}")
            if moved != len(ids):
                log.warning(
                    "of steps %s, %d were taken over by other runs; their outcomes are those runs'",
                    ids,
                    len(ids) - moved,
                )


def per_step(rows: list[tuple[int, int, str, str, dict]], column: int, field: Field) -> Any:
    """A column's value for each step of `rows`: the value when they share it."""
    values = [row[column] for row in rows]
    if all(v == values[0] for v in values):
        return values[0]
    return value_per_row({row[0]: row[column] for row in rows}, field)
