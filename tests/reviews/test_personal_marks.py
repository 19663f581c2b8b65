"""A person's own parts of the review page (the viewer digest's input), read in one query."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews.domain.threads import EDIT_WINDOW
from reviews.models import CohortProgress, FileViewed, ThreadMessage
from reviews.selectors import personal_marks


def _message(space, author, **extra):
    return ThreadMessage.objects.create(
        space=space,
        subject="node:1",
        source=ThreadMessage.Source.PERSON,
        author=author,
        author_label=author.email,
        body="Is this reachable?",
        **extra,
    )


def test_a_persons_marks_are_theirs_alone_and_read_in_one_query(
    review_factory, workspace, alice, charlie, stream_factory
):
    review_round = review_factory(workspace=workspace)
    space = review_round.space
    CohortProgress.objects.create(user=alice, space=space, cohort_key="auth")
    FileViewed.objects.create(user=alice, space=space, file_key="k1", path="app/views.py")
    fresh = _message(space, alice)
    old = _message(space, alice)
    ThreadMessage.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - EDIT_WINDOW - timedelta(minutes=1)
    )
    stream_factory(review_round, "claude-code", agent=f"agent:{alice.pk}:claude-code")
    # Someone else's marks, messages and agents are not alice's.
    CohortProgress.objects.create(user=charlie, space=space, cohort_key="billing")
    FileViewed.objects.create(user=charlie, space=space, file_key="k2", path="app/models.py")
    _message(space, charlie)
    stream_factory(review_round, "codex", agent=f"agent:{charlie.pk}:codex")

    with CaptureQueriesContext(connection) as queries:
        marks = personal_marks(space.pk, alice.pk)

    assert marks == {"c:auth", "f:k1", f"m:{fresh.pk}", "own-agent"}
    assert len(queries) == 1
    assert personal_marks(space.pk, charlie.pk) == {
        "c:billing",
        "f:k2",
        f"m:{ThreadMessage.objects.filter(author=charlie).get().pk}",
        "own-agent",
    }
    nobody = personal_marks(space.pk, alice.pk + charlie.pk + 100)
    assert nobody == frozenset()
