"""What other apps do when a repository is disconnected or its reviews deleted for good.

The workspaces app sits below reviews: it may not import the review services, yet
disconnecting a repository must cancel its open review rounds, and deleting its reviews must
cancel the approval requests pending on them. The reviews app registers one listener for each
at start-up (reviews/apps.py `ready()`, reviews/services/repository_listeners.py); the archive
service calls them inside its own transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from workspaces.models import Repository, Workspace


class RoundsCancel(Protocol):
    """Cancel the repository's open review rounds; returns how many were cancelled."""

    def __call__(self, *, repository: Repository, actor: Any, request: Any) -> int: ...


class ApprovalsCancel(Protocol):
    """Cancel the open approval requests on review spaces that are going away; returns how
    many were cancelled."""

    def __call__(
        self, *, workspace: Workspace, space_ids: Sequence[int], why: str, actor: Any
    ) -> int: ...


@dataclass
class RepositoryListeners:
    rounds_cancel: RoundsCancel | None = None
    approvals_cancel: ApprovalsCancel | None = None


#: Set once at start-up by the reviews app.
listeners = RepositoryListeners()


def repository_listeners_set(
    *, rounds_cancel: RoundsCancel, approvals_cancel: ApprovalsCancel
) -> None:
    listeners.rounds_cancel = rounds_cancel
    listeners.approvals_cancel = approvals_cancel


def open_rounds_cancel(*, repository: Repository, actor: Any, request: Any) -> int:
    if listeners.rounds_cancel is None:
        raise LookupError("no listener cancels review rounds: is the reviews app installed?")
    return listeners.rounds_cancel(repository=repository, actor=actor, request=request)


def space_approvals_cancel(
    *, workspace: Workspace, space_ids: Sequence[int], why: str, actor: Any
) -> int:
    if listeners.approvals_cancel is None:
        raise LookupError("no listener cancels approval requests: is the reviews app installed?")
    return listeners.approvals_cancel(
        workspace=workspace, space_ids=space_ids, why=why, actor=actor
    )
