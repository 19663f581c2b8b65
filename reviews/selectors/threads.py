"""Reads of the review's threads: the messages each section of the page shows, the ones a
person may still edit, and a space's (or one round's) messages for the API and exports."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import CharField, Count, Q, Value
from django.db.models.functions import Cast
from django.utils import timezone

from reviews.domain.consensus import OUTSIDE_AGENT_PREFIX
from reviews.domain.threads import EDIT_WINDOW, Source, Subject, SubjectKind, ThreadError
from reviews.models import (
    CohortProgress,
    FileViewed,
    ReviewerStream,
    ReviewRound,
    ReviewSpace,
    ThreadMessage,
)
from reviews.selectors.review_page import ReviewPage

#: The sections that show threads: a finding's (list and diff), a disagreement's, a note's.
THREAD_SECTIONS = frozenset({"disagreements", "findings", "cohorts", "notes"})


def page_threads(
    *, space: ReviewSpace, review_round: ReviewRound | None, streams: Sequence[ReviewerStream]
) -> dict[str, list[ThreadMessage]]:
    """The messages of every thread the page can show (the shown round's findings and
    disagreements, its reviewers' notes), by subject, in the order they were posted. One
    query, whatever the number of threads."""
    if review_round is None:
        return {}
    notes = [
        f"note:{stream.pk}:{index}"
        for stream in streams
        for index in range(len(stream.notes or []))
    ]
    rows = ThreadMessage.objects.filter(space=space).filter(
        Q(node__round_id=review_round.pk) | Q(subject__in=notes)
    )
    threads: dict[str, list[ThreadMessage]] = {}
    from_github: set[int] = set()
    for message in rows.order_by("pk"):
        threads.setdefault(message.subject, []).append(message)
        if message.source == ThreadMessage.Source.GITHUB:
            from_github.add(message.pk)
        # A reviewer's answer to a question asked on GitHub may be posted there.
        message.answers_github = (  # type: ignore[attr-defined]  # for the page only
            message.source == ThreadMessage.Source.REVIEWER
            and message.in_reply_to_id in from_github
        )
    return threads


def personal_marks(space_id: int, user_id: int) -> frozenset[str]:
    """The person's own parts of the page, in one query: the cohorts they marked reviewed
    ("c:<key>"), the files they marked viewed ("f:<key>"), the messages they may still edit
    ("m:<pk>", the edit window) and, if one of their agents reviewed here, "own-agent"."""

    def tag(prefix: str) -> Value:
        return Value(prefix, output_field=CharField())

    cohorts = CohortProgress.objects.filter(user_id=user_id, space_id=space_id)
    files = FileViewed.objects.filter(user_id=user_id, space_id=space_id)
    messages = ThreadMessage.objects.filter(
        space_id=space_id,
        author_id=user_id,
        source__in=(Source.PERSON.value, Source.AGENT.value),
        created_at__gte=timezone.now() - EDIT_WINDOW,
    )
    agents = ReviewerStream.objects.filter(
        round__space_id=space_id, agent__startswith=f"{OUTSIDE_AGENT_PREFIX}{user_id}:"
    )
    # Unordered: SQLite refuses an ORDER BY (a model's default) inside a UNION.
    rows = (
        cohorts.order_by()
        .values_list(tag("c:"), "cohort_key")
        .union(
            files.order_by().values_list(tag("f:"), "file_key"),
            messages.order_by().values_list(tag("m:"), Cast("pk", CharField())),
            agents.order_by().values_list(tag("own-agent"), tag("")),
            all=True,
        )
    )
    return frozenset(prefix + key for prefix, key in rows)


def thread_rows(
    *, space: ReviewSpace, key: str | None = None, round_of: ReviewPage | None = None
) -> list[ThreadMessage]:
    """The space's thread messages in the order they were posted (one thread's with `key`),
    each with `revision_count`, the number of earlier texts an edit kept. With `round_of`,
    only the threads of that page's round: its findings and disagreements (by node) and its
    reviewers' notes (by stream). One query."""
    rows = (
        ThreadMessage.objects.filter(space=space)
        .select_related("proposal_decided_by")
        .annotate(revision_count=Count("revisions"))
        .order_by("pk")
    )
    if key is not None:
        rows = rows.filter(subject=key)
    if round_of is None:
        return [*rows]
    node_ids = {n.pk for n in round_of.nodes}
    stream_ids = {s.pk for s in round_of.streams}
    kept: list[ThreadMessage] = []
    for row in rows:
        try:
            subject = Subject.parse(row.subject)
        except ThreadError:
            continue
        if subject.kind is SubjectKind.NOTE:
            if subject.ids[0] in stream_ids:
                kept.append(row)
        elif row.node_id in node_ids:
            kept.append(row)
    return kept
