"""A reviewer stream's state: the one writer."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

from reviews.domain.stream_states import StreamState, sources_of
from reviews.events import emit
from reviews.models import ReviewerStream, ReviewNode, ReviewRound

MAX_ERROR_CHARS = 2000


def stream_transition(
    stream: ReviewerStream, to: StreamState | str, *, error: str | None = None, **fields: Any
) -> bool:
    """The only writer of ReviewerStream.state. Moves the stream to `to` if the table in
    reviews/domain/stream_states.py allows it from the state it is in NOW (compare-and-set:
    nothing overwrites a stream that finished), together with the columns that go with the
    move: `error` (cut to 2000 characters), and what a run records (`attempts`, `coverage_note`,
    token counts, …; expressions such as F("attempts") + 1 are allowed); a reviewer's run that
    ends has its findings counted (`accepted`). Returns False,
    changing nothing, when the move is not allowed; the instance is updated when it moved."""
    to = StreamState(to)
    if "state" in fields:
        raise TypeError("the state is the `to` argument")
    values: dict[str, Any] = {"state": to.value, **fields}
    if error is not None:
        values["error"] = error[:MAX_ERROR_CHARS]
    counted: dict[str, Any] = {}
    reviewer = stream.kind in (ReviewerStream.Kind.MODEL, ReviewerStream.Kind.ANALYZER)
    if reviewer and to in (StreamState.DONE, StreamState.FAILED):
        # A reviewer's findings are written as it makes them and counted here, in the
        # statement that ends its run (not read back into `stream`).
        findings = ReviewNode.objects.filter(stream=OuterRef("pk")).order_by().values("stream")
        counted["accepted"] = Coalesce(
            Subquery(findings.annotate(n=Count("pk")).values("n")[:1]), 0
        )
    moved = ReviewerStream.objects.filter(
        pk=stream.pk, state__in=[s.value for s in sources_of(to)]
    ).update(**values, **counted)
    if not moved:
        return False
    space_id = (
        stream.round.space_id  # a runner's stream comes with its round
        if ReviewerStream.round.is_cached(stream)
        else ReviewRound.objects.values_list("space_id", flat=True).get(pk=stream.round_id)
    )
    emit(space_id, "review.stream", stream=stream.pk, state=to.value)
    expressions = [name for name, value in values.items() if hasattr(value, "resolve_expression")]
    for name, value in values.items():
        if name not in expressions:
            setattr(stream, name, value)
    if expressions:  # an attempt counted in the database: read back what it became
        stream.refresh_from_db(fields=expressions)
    return True
