"""Reads of workspace state that pages, the API and services share."""

from __future__ import annotations

from reviews.models import ReviewSpace


def archived_approval_target(approval) -> object | None:
    """The archived repository an approval request would act on (a publish of one of its
    reviews): approving it is a change to a read-only review."""

    if approval.target_type != "reviewspace" or not approval.target_id.isdigit():
        return None
    space = (
        ReviewSpace.objects.filter(
            pk=int(approval.target_id),
            workspace_id=approval.workspace_id,
            pull_request__repository__archived_at__isnull=False,
        )
        .select_related("pull_request__repository")
        .first()
    )
    return space.pull_request.repository if space is not None else None


def archived_space_repository(*, user, slug: str, space_id) -> object | None:
    """The archived repository of space `space_id`, if `user` is a member of its workspace."""

    try:
        space_pk = int(space_id)
    except (TypeError, ValueError):
        return None
    space = (
        ReviewSpace.objects.filter(
            pk=space_pk,
            workspace__slug=slug,
            workspace__memberships__user=user,
            pull_request__repository__archived_at__isnull=False,
        )
        .select_related("pull_request__repository")
        .first()
    )
    return space.pull_request.repository if space is not None else None
