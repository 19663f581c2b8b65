"""Which connected repositories a GitHub delivery may reach: the tenancy of webhook events.

Both the pull request events (reviews/services/webhooks.py) and the comments asked on GitHub
(reviews/services/github_replies.py) find their repositories here, so neither imports the
other for it.
"""

from __future__ import annotations

from django.db.models import QuerySet

from reviews.services.github import github_app_mode
from workspaces.models import Repository


def tenant_repositories(full_name: str, installation_id: int | None) -> QuerySet[Repository]:
    """The connected copies of `full_name` a delivery may reach: with a GitHub App only in the
    workspace its installation is bound to; with a server-wide token only where a server
    operator still grants the repository. Archived ones included (the caller says why it
    ignores them)."""
    repos = Repository.objects.select_related("workspace").filter(
        kind=Repository.Kind.GITHUB, full_name__iexact=full_name
    )
    if github_app_mode():
        if installation_id is None:
            return repos.none()
        return repos.filter(workspace__github_installations__installation_id=installation_id)
    return repos.filter(workspace__repository_grants__full_name__iexact=full_name).distinct()
