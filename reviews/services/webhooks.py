"""GitHub webhook deliveries → review rounds (issue: sources and publishing §4)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from reviews.models import ReviewRound, WebhookDelivery
from reviews.services.github import github_app_mode
from reviews.services.spaces import pull_request_upsert, round_start, space_get_or_create
from reviews.sources.webhooks import WebhookPayloadError, parse_pull_request_event
from workspaces.models import Repository

log = logging.getLogger(__name__)


def webhook_receive(*, delivery_id: str, event: str, payload: Any) -> tuple[str, list[ReviewRound]]:
    """Process one delivery exactly once. Returns (outcome, rounds queued)."""
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.create(
                delivery_id=delivery_id[:64], event=event[:40]
            )
    except IntegrityError:
        return "duplicate delivery: already processed", []
    try:
        parsed = parse_pull_request_event(event, payload)
    except WebhookPayloadError as exc:
        return _done(delivery, f"malformed payload: {exc}"), []
    if parsed is None:
        return _done(delivery, f"ignored: {event} events do not start reviews"), []
    delivery.action = parsed.action[:40]
    if not parsed.queues_round:
        return _done(delivery, f"ignored: action {parsed.action}"), []
    full_name = f"{parsed.owner}/{parsed.repo}"
    repositories = list(
        tenant_repositories(full_name, parsed.installation_id).filter(auto_review=True)
    )
    if not repositories:
        log.info(
            "webhook %s: %s is not connected with auto-review; ignored", delivery_id, full_name
        )
        return _done(delivery, f"ignored: {full_name} is not connected with auto-review"), []
    rounds = []
    with transaction.atomic():
        for repo in repositories:
            pr = pull_request_upsert(
                repository=repo,
                number=parsed.number,
                base_ref=parsed.base_ref,
                head_ref=parsed.head_ref,
                base_sha=parsed.base_sha,
                head_sha=parsed.head_sha,
                title=parsed.title,
                body=parsed.body,
                author=parsed.author,
            )
            space = space_get_or_create(pull_request=pr)
            rounds.append(
                round_start(
                    space=space,
                    head_sha=parsed.head_sha,
                    base_sha=parsed.base_sha,
                    tier=repo.workspace.tier,
                )
            )
        outcome = _done(delivery, f"queued {len(rounds)} round(s) for {full_name}#{parsed.number}")
    return outcome, rounds


def tenant_repositories(full_name: str, installation_id: int | None):
    """The connected copies of `full_name` a delivery may reach: with a GitHub App only in the
    workspace its installation is bound to; with a server-wide token only where a server
    operator still grants the repository."""
    repos = Repository.objects.select_related("workspace").filter(
        kind=Repository.Kind.GITHUB, full_name__iexact=full_name
    )
    if github_app_mode():
        if installation_id is None:
            return repos.none()
        return repos.filter(workspace__github_installations__installation_id=installation_id)
    return repos.filter(workspace__repository_grants__full_name__iexact=full_name).distinct()


def _done(delivery: WebhookDelivery, outcome: str) -> str:
    delivery.outcome = outcome[:200]
    delivery.save(update_fields=["outcome", "action"])
    return outcome
