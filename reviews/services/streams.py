"""A reviewer stream's state: the one writer."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from reviews.domain.stream_states import StreamState, sources_of
from reviews.live.events import emit
from reviews.models import ReviewerStream, ReviewNode, ReviewRound
from reviews.services.batched import value_per_row

MAX_ERROR_CHARS = 2000


def stream_transition(
    stream: ReviewerStream | Sequence[ReviewerStream],
    to: StreamState | str,
    *,
    error: str | None = None,
    count_attempt: bool = False,
    **fields: Any,
) -> bool:
    """The only writer of ReviewerStream.state. Moves the stream to `to` if the table in
    reviews/domain/stream_states.py allows it from the state it is in NOW (compare-and-set:
    nothing overwrites a stream that finished), together with the columns that go with the
    move: `error` (cut to 2000 characters), and what a run records (`attempts`, `coverage_note`,
    token counts, …; expressions such as F("attempts") + 1 are allowed); a reviewer's run that
    ends has its findings counted (`accepted`). Returns False,
    changing nothing, when the move is not allowed; the instance is updated when it moved.

    Several streams (each read with its round) move in one statement, the same columns for
    each; what the expressions became, and the state of any that did not move, are read back in
    one more. True when every one of them moved.

    `count_attempt`: each stream's attempts become what it was read with plus one, and it
    moves only if they are still that (compare-and-set on the count too): when every stream
    moved, nothing is read back."""
    to = StreamState(to)
    if "state" in fields:
        raise TypeError("the state is the `to` argument")
    streams = [stream] if isinstance(stream, ReviewerStream) else list(stream)
    if not streams:
        return True
    values: dict[str, Any] = {"state": to.value, **fields}
    if error is not None:
        values["error"] = error[:MAX_ERROR_CHARS]
    counted = _findings_counted(streams, to)
    claim = Q()
    attempts = {s.pk: s.attempts + 1 for s in streams}
    if count_attempt:
        values["attempts"] = value_per_row(attempts, IntegerField())
        claim = reduce(or_, (Q(pk=s.pk, attempts=s.attempts) for s in streams))
    moved = ReviewerStream.objects.filter(
        claim, pk__in=[s.pk for s in streams], state__in=[s.value for s in sources_of(to)]
    ).update(**values, **counted)
    if not moved:
        return False
    if count_attempt and moved == len(streams):
        del values["attempts"]  # each is what was written: set below, not read back
    expressions = [name for name, value in values.items() if hasattr(value, "resolve_expression")]
    # What each stream is now: what was written, the expressions and (when not every stream
    # moved) the states read back in one statement; a single stream that moved is `to`.
    now = _streams_now(streams, to, expressions, everyone=moved == len(streams))
    for each in streams:
        state, read = now[each.pk]
        if state != to.value:
            each.state = state  # moved by someone else meanwhile: as it stands
            continue
        emit(_space_id(each), "review.stream", stream=each.pk, state=to.value)
        for name, value in values.items():
            if name not in expressions:
                setattr(each, name, value)
        if count_attempt and "attempts" not in expressions:
            each.attempts = attempts[each.pk]
        if expressions and len(streams) == 1:
            # An attempt counted in the database: read back what it became.
            each.refresh_from_db(fields=expressions)
        for name, value in zip(expressions, read, strict=False):
            setattr(each, name, value)
    return moved == len(streams)


def _space_id(stream: ReviewerStream) -> int:
    if ReviewerStream.round.is_cached(stream):
        return stream.round.space_id  # a runner's stream comes with its round
    return ReviewRound.objects.values_list("space_id", flat=True).get(pk=stream.round_id)


def _findings_counted(streams: Sequence[ReviewerStream], to: StreamState) -> dict[str, Any]:
    """`accepted` as the statement that ends a reviewer's run counts it: its findings are
    written as it makes them and counted there (not read back into the stream)."""
    reviewer = all(
        s.kind in (ReviewerStream.Kind.MODEL, ReviewerStream.Kind.ANALYZER) for s in streams
    )
    if not reviewer or to not in (StreamState.DONE, StreamState.FAILED):
        return {}
    findings = ReviewNode.objects.filter(stream=OuterRef("pk")).order_by().values("stream")
    return {"accepted": Coalesce(Subquery(findings.annotate(n=Count("pk")).values("n")[:1]), 0)}


def _streams_now(
    streams: Sequence[ReviewerStream],
    to: StreamState,
    expressions: Sequence[str],
    *,
    everyone: bool,
) -> dict[int, tuple[str, tuple[Any, ...]]]:
    """Each stream's state and expression columns after the move: `to` and nothing to read for
    a single stream (it moved); for several, read back in one statement when an expression
    was written or not `everyone` moved."""
    now: dict[int, tuple[str, tuple[Any, ...]]] = {s.pk: (to.value, ()) for s in streams}
    if len(streams) > 1 and (expressions or not everyone):
        now = {
            pk: (state, tuple(rest))
            for pk, state, *rest in ReviewerStream.objects.filter(pk__in=list(now)).values_list(
                "pk", "state", *expressions
            )
        }
    return now
