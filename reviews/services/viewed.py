"""A person's "viewed" marks on the changed files of a review (their own reading progress)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from reviews.models import FileViewed, ReviewRound, ReviewSpace
from reviews.selectors.changed_files import round_file_facts
from workspaces.rules import ReadOnlyError, RuleError, archived_message


@transaction.atomic
def file_viewed_mark(
    *,
    space: ReviewSpace,
    review_round: ReviewRound,
    user: Any,
    path: str,
    viewed: bool,
) -> str:
    """Mark `path` of `review_round` as viewed (or not) by `user`; returns the file's key.

    The mark is kept under the file's content key, so it holds in every round where the file's
    changes are the same. A review of an archived repository is read-only, marks included."""
    repository = space.pull_request.repository
    if repository.archived_at:
        raise ReadOnlyError(archived_message(repository))
    if review_round.space_id != space.pk:
        raise RuleError("That round belongs to another review.", http_status=404)
    found = next((f for f in round_file_facts(review_round) if f.path == path), None)
    if found is None:
        raise RuleError(
            f"“{path[:200]}” is not a file changed in round {review_round.number}.",
            http_status=404,
        )
    key = found.key
    if viewed:
        FileViewed.objects.update_or_create(
            user=user, space=space, file_key=key, defaults={"path": path}
        )
    else:
        FileViewed.objects.filter(user=user, space=space, file_key=key).delete()
    return key
