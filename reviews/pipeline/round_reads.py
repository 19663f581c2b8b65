"""What the coordinator read of a round during one move, shared by the stages it runs in that
move (the lead pass and the panel's planning, the critic and the finaliser) instead of each
reading the round's findings and streams again; and what an inline stage learned, written with
the statement that records it done.

Sharing is on only inside `sharing` (reviews/pipeline/runner.py `_move`), for the round object
that move read. There the coordinator holds the round's lease and the steps of the stage before
are over, so the findings change only through the stages it runs itself, on these same objects
(the lead pass's consolidation, the panel's "unverified" tags). A stage that writes findings or
streams some other way calls `forget`. Anywhere else every call reads afresh."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from reviews.models import ReviewerStream, ReviewNode, ReviewRound


@dataclass
class _Reads:
    nodes: list[ReviewNode] | None = None
    confirmations: bool = False  # the nodes came with their confirmations
    streams: list[ReviewerStream] | None = None
    # The streams prepare just wrote, as it wrote them (their ids and names, not their state).
    prepared: list[ReviewerStream] | None = None
    unsaved: bool = False  # an inline stage left its stats and facts to the stage's statement
    # The round's spend ledger (reviews/pipeline/budget_runs.py `Ledger`) as this move read
    # it with the round, with what the calls of its own stages spent since added.
    ledger: Any = None


@contextmanager
def sharing(review_round: ReviewRound) -> Iterator[None]:
    setattr(review_round, "_quorum_shared_reads", _Reads())  # noqa: B010 (a name the guard reads)
    try:
        yield
    finally:
        delattr(review_round, "_quorum_shared_reads")


def _shared(review_round: ReviewRound) -> _Reads | None:
    return getattr(review_round, "_quorum_shared_reads", None)


def keep_nodes(review_round: ReviewRound, nodes: list[ReviewNode], *, confirmations: bool) -> None:
    """`nodes`: every finding of the round, each with its stream, just read (or written)."""
    shared = _shared(review_round)
    if shared is not None:
        shared.nodes, shared.confirmations = nodes, confirmations


def nodes(review_round: ReviewRound, *, confirmations: bool = False) -> list[ReviewNode]:
    """Every finding of the round with its stream (and its confirmations)."""
    shared = _shared(review_round)
    if (
        shared is not None
        and shared.nodes is not None
        and (shared.confirmations or not confirmations)
    ):
        return shared.nodes
    rows = ReviewNode.objects.filter(round=review_round).select_related("stream")
    if confirmations:
        rows = rows.prefetch_related("confirmations")
    read = list(rows)
    keep_nodes(review_round, read, confirmations=confirmations)
    return read


def streams(review_round: ReviewRound) -> list[ReviewerStream]:
    """The round's reviewer and analyzer streams (not the verifiers)."""
    shared = _shared(review_round)
    if shared is not None and shared.streams is not None:
        return shared.streams
    read = list(review_round.streams.exclude(kind=ReviewerStream.Kind.VERIFIER))
    if shared is not None:
        shared.streams = read
    return read


def keep_prepared(review_round: ReviewRound, streams: list[ReviewerStream]) -> None:
    shared = _shared(review_round)
    if shared is not None:
        shared.prepared = streams


def prepared(review_round: ReviewRound) -> list[ReviewerStream] | None:
    """The reviewer streams prepare wrote in this move (each with its id), if it did."""
    shared = _shared(review_round)
    return shared.prepared if shared is not None else None


def ledger(review_round: ReviewRound) -> Any:
    """The round's spend ledger, if this move read it."""
    shared = _shared(review_round)
    return shared.ledger if shared is not None else None


def keep_ledger(review_round: ReviewRound, ledger: Any) -> None:
    """The round's spend ledger, just read, or with the spend of a call of this move added:
    within a move only its own stages' calls add to it (the steps of the stage before are
    over)."""
    shared = _shared(review_round)
    if shared is not None:
        shared.ledger = ledger


def save_learned(review_round: ReviewRound) -> None:
    """Save what an inline stage learned, the round's stats and facts. Within a move they go
    in the statement that records the stage done and enters the next (the runner asks
    `take_unsaved`): one write, not two, and a stage that stops before it has written nothing.
    Anywhere else, now."""
    shared = _shared(review_round)
    if shared is None:
        review_round.save(update_fields=["stats", "facts"])
    else:
        shared.unsaved = True


def take_unsaved(review_round: ReviewRound) -> bool:
    """Whether a stage of this move left its stats and facts for the caller to write."""
    shared = _shared(review_round)
    if shared is None or not shared.unsaved:
        return False
    shared.unsaved = False
    return True


def forget(review_round: ReviewRound) -> None:
    """The round's findings or streams were written other than through the objects shared."""
    shared = _shared(review_round)
    if shared is not None:
        shared.nodes, shared.streams = None, None
