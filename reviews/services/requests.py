"""Starting a review from the browser, the API or the command line."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from config.application_errors import ApplicationError, ErrorCode
from config.background import QueueUnavailable
from guardrails.audit import Actor, Target, audit_record
from reviews.models import ReviewRound
from reviews.services.dispatch import round_enqueue
from reviews.services.github import github_client
from reviews.services.rounds import ReviewQueuedError, round_start
from reviews.services.spaces import pull_request_upsert, space_get_or_create
from reviews.sources.git_local import GitError, LocalGitSource
from reviews.sources.github_client import GitHubError
from workspaces.models import Repository


class ReviewRequestError(ApplicationError):
    """The review cannot start; the message is for the person who asked."""

    code = ErrorCode.REVIEW_REFUSED


def _local_pull_request(repository: Repository, base: str, head: str):
    source = LocalGitSource(repository.local_path)
    base = base or repository.base_branch
    try:
        base_sha, head_sha = source.resolve(base), source.resolve(head)
    except GitError as exc:
        raise ReviewRequestError(f"Cannot read {base}…{head} in {repository}: {exc}") from exc
    if base_sha == head_sha:
        raise ReviewRequestError(
            f"{head} and {base} are the same commit: there is nothing to review."
        )
    return pull_request_upsert(
        repository=repository,
        base_ref=base,
        head_ref=head,
        base_sha=base_sha,
        head_sha=head_sha,
        title=f"{head} into {base}",
    )


def _github_pull_request(repository: Repository, number: int):
    owner, name = repository.full_name.split("/", 1)
    try:
        with github_client() as client:
            pull = client.get_pull(owner, name, number)
    except GitHubError as exc:
        hint = " (try again later)" if exc.retryable else ""
        raise ReviewRequestError(
            f"GitHub could not give {repository}#{number}: {exc}{hint}"
        ) from exc
    except ImproperlyConfigured as exc:  # no GitHub token or app on this server
        raise ReviewRequestError(str(exc)) from exc
    return pull_request_upsert(
        repository=repository,
        number=number,
        base_ref=pull["base"]["ref"],
        head_ref=pull["head"]["ref"],
        base_sha=pull["base"]["sha"],
        head_sha=pull["head"]["sha"],
        title=pull.get("title") or "",
        body=pull.get("body") or "",
        author=(pull.get("user") or {}).get("login", ""),
    )


def review_request(
    *,
    repository: Repository,
    actor: Any,
    number: int | None = None,
    base: str = "",
    head: str = "",
    original_request: str = "",
    tier: str | None = None,
    request: Any = None,
    queue: bool = True,
) -> ReviewRound:
    """Resolve the PR, open (or reuse) its space, start a round and queue the pipeline
    (`queue=False`: the caller runs it, e.g. the command line with run_inline)."""
    if repository.archived_at is not None:
        raise ReviewRequestError(
            f"{repository} is disconnected: its reviews are kept read-only. An admin connects "
            "it again (Settings → Repositories) to review it."
        )
    if repository.kind == Repository.Kind.LOCAL:
        pr = _local_pull_request(repository, base, head)
    else:
        if number is None:
            raise ReviewRequestError("A GitHub review needs the pull request number.")
        pr = _github_pull_request(repository, number)
    space = space_get_or_create(pull_request=pr)
    review_round = round_start(
        space=space,
        head_sha=pr.head_sha,
        base_sha=pr.base_sha,
        tier=tier or repository.workspace.tier,
        original_request=original_request,
        by_person=not getattr(actor, "quorum_agent", ""),
    )
    audit_record(
        action="review.requested",
        actor=Actor.of(actor),
        workspace=repository.workspace,
        target=Target("reviewspace", str(space.pk), str(pr)),
        payload={"round": review_round.number, "head_sha": pr.head_sha, "tier": review_round.tier},
        request=request,
    )
    if queue:
        try:
            round_enqueue(review_round)
        except QueueUnavailable as exc:
            raise ReviewQueuedError(review_round) from exc
    return review_round
