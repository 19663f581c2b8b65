"""GitHub webhook deliveries → review rounds, completed reviews, the repository list, and
comments people write on GitHub about Quorum's findings (reviews/services/github_replies.py).

A verified `pull_request` delivery starts a round and queues it exactly as the "Start review"
button does (Celery in the full stack, a server thread in the embedded default), after the
round is committed. One delivery is processed once (WebhookDelivery is unique per delivery id),
and a head already reviewed or under review never gets a second round from another delivery.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, NamedTuple

from django.db import IntegrityError, transaction

from config.background import QueueUnavailable
from guardrails.audit import SYSTEM, Target, audit_record
from reviews.domain.space_status import ClosedReason
from reviews.models import PullRequest, ReviewRound, ReviewSpace, WebhookDelivery
from reviews.services.dispatch import round_enqueue
from reviews.services.github_replies import comment_receive
from reviews.services.github_tenancy import tenant_repositories
from reviews.services.rounds import RoundError, round_cancel, round_start
from reviews.services.spaces import (
    pull_request_upsert,
    space_close,
    space_get_or_create,
    space_reopen,
    space_status_refresh,
)
from reviews.sources.webhooks import (
    ROUND_ACTIONS,
    InstallationEvent,
    PullRequestEvent,
    WebhookPayloadError,
    parse_comment_event,
    parse_installation_event,
    parse_pull_request_event,
)
from workspaces.models import GitHubInstallation, Repository
from workspaces.services import installation_unbind, repository_archive

log = logging.getLogger(__name__)

#: Rounds of a head that make another delivery for the same head start nothing.
_HEAD_COVERED = (ReviewRound.State.PENDING, ReviewRound.State.RUNNING, ReviewRound.State.FINISHED)


class WebhookResult(NamedTuple):
    detail: str  # what was done, for GitHub's delivery log and ours
    rounds: list[ReviewRound]  # rounds started (and queued) by this delivery
    status: int  # 202 when accepted for background work or deliberately ignored, else 200


def webhook_receive(*, delivery_id: str, event: str, payload: Any) -> WebhookResult:
    """Process one delivery exactly once."""
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.create(
                delivery_id=delivery_id[:64], event=event[:40]
            )
    except IntegrityError:
        return WebhookResult("duplicate delivery: already processed", [], 200)
    try:
        installation = parse_installation_event(event, payload)
        comment = None if installation else parse_comment_event(event, payload)
        parsed = None if installation or comment else parse_pull_request_event(event, payload)
    except WebhookPayloadError as exc:
        return WebhookResult(_done(delivery, f"malformed payload: {exc}"), [], 200)
    if installation is not None:
        delivery.action = installation.action[:40]
        return WebhookResult(_done(delivery, installation_receive(installation)), [], 200)
    if comment is not None:
        delivery.action = comment.action[:40]
        return WebhookResult(_done(delivery, comment_receive(comment)), [], 200)
    if parsed is None:
        return WebhookResult(
            _done(delivery, f"ignored: {event} events do not start reviews"), [], 200
        )
    delivery.action = parsed.action[:40]
    result = _pull_request_receive(parsed, delivery_id)
    _done(delivery, result.detail)
    for review_round in result.rounds:
        # Committed above: a worker (or the embedded server's thread) may take it at once.
        try:
            round_enqueue(review_round)
        except QueueUnavailable as exc:
            log.warning(
                "webhook %s: round %s not queued (%s); the sweeper starts it",
                delivery_id,
                review_round.pk,
                exc,
            )
    return result


def _pull_request_receive(parsed: PullRequestEvent, delivery_id: str) -> WebhookResult:
    full_name = f"{parsed.owner}/{parsed.repo}"
    reachable = list(tenant_repositories(full_name, parsed.installation_id))
    live = [r for r in reachable if r.archived_at is None]
    if reachable and not live:
        return WebhookResult(
            f"ignored: {full_name} is disconnected in Quorum (archived); its reviews are kept "
            "read-only and no review starts until an admin connects it again",
            [],
            202,
        )
    if parsed.action == "closed":
        return WebhookResult(_pull_request_closed(parsed, live, full_name), [], 200)
    if parsed.action not in ROUND_ACTIONS:
        return WebhookResult(f"ignored: action {parsed.action}", [], 200)
    auto = [r for r in live if r.auto_review]
    if not auto:
        log.info(
            "webhook %s: %s is not connected with auto-review; ignored", delivery_id, full_name
        )
        return WebhookResult(f"ignored: {full_name} is not connected with auto-review", [], 200)
    eligible = [r for r in auto if parsed.queues_round_for(review_drafts=r.review_drafts)]
    if not eligible:
        return WebhookResult(
            f"ignored: {full_name}#{parsed.number} is a draft and the repository does not "
            "review drafts (its settings turn that on)",
            [],
            200,
        )
    rounds: list[ReviewRound] = []
    notes: list[str] = []
    with transaction.atomic():
        for repo in eligible:
            review_round, note = _round_for_head(repo, parsed, delivery_id)
            if review_round is not None:
                rounds.append(review_round)
            if note:
                notes.append(note)
    where = f"{full_name}#{parsed.number}"
    detail = f"queued {len(rounds)} round(s) for {where}" if rounds else f"no new round for {where}"
    if notes:
        detail += ": " + "; ".join(notes)
    return WebhookResult(detail, rounds, 202 if rounds else 200)


def _round_for_head(
    repo: Repository, parsed: PullRequestEvent, delivery_id: str
) -> tuple[ReviewRound | None, str]:
    """Start a round for the delivery's head, unless one is queued, running or finished for it
    already (a redelivery with a new id, a reopened pull request with the same head)."""
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
    # The space's lock orders concurrent deliveries: the second one sees the first's round.
    locked = ReviewSpace.objects.select_for_update().get(pk=space.pk)
    newest = locked.rounds.order_by("-number").first()
    if newest is not None and newest.head_sha == parsed.head_sha and newest.state in _HEAD_COVERED:
        if locked.closed_reason:
            # Reopened with the same head: the review is live again and its verdict stands.
            space_reopen(space=locked)
            space_status_refresh(space=locked.pk)
            return None, f"reopened; head already reviewed in round {newest.number}"
        return None, f"head already {newest.state} in round {newest.number}"
    review_round = round_start(
        space=locked, head_sha=parsed.head_sha, base_sha=parsed.base_sha, tier=repo.workspace.tier
    )
    audit_record(
        action="review.requested",
        actor=SYSTEM,
        workspace=repo.workspace,
        target=Target("reviewspace", str(locked.pk), str(pr)),
        payload={
            "round": review_round.number,
            "head_sha": parsed.head_sha,
            "tier": review_round.tier,
            "source": "github webhook",
            "event_action": parsed.action,
            "delivery": delivery_id[:64],
            "sender": parsed.sender,
        },
    )
    return review_round, ""


def _pull_request_closed(
    parsed: PullRequestEvent, repositories: list[Repository], full_name: str
) -> str:
    """Merged or closed: each review of the pull request is completed; a round still running
    is cancelled (its head will never be merged as reviewed)."""

    reason = ClosedReason.MERGED if parsed.merged else ClosedReason.CLOSED
    completed = 0
    with transaction.atomic():
        for space in ReviewSpace.objects.filter(
            pull_request__in=PullRequest.objects.filter(
                repository__in=repositories, number=parsed.number
            )
        ).select_related("workspace", "pull_request"):
            for review_round in space.rounds.filter(
                state__in=[ReviewRound.State.PENDING, ReviewRound.State.RUNNING]
            ):
                with contextlib.suppress(RoundError):  # it ended on its own meanwhile
                    round_cancel(
                        review_round=review_round,
                        actor=SYSTEM,
                        reason=f"Cancelled: the pull request was {reason.value} on GitHub.",
                    )
            space_close(space=space, reason=reason, note=f"{reason.value} on GitHub")
            completed += 1
    if not completed:
        return f"no review of {full_name}#{parsed.number} to complete"
    return f"completed {completed} review(s) of {full_name}#{parsed.number}: {reason.value}"


def installation_receive(event: InstallationEvent) -> str:
    """Keep a GitHub App's repositories in step with its installation.

    The installation must have been bound to a workspace by a server operator (manage.py
    tenancy bind-installation); nothing here binds one. Removed repositories (and all of a
    deleted installation's) are archived in that workspace: their reviews stay readable and
    their webhooks are ignored. Added repositories are not connected: an admin connects them
    (the connect form checks the installation on GitHub, so it accepts them now). A deleted
    installation is unbound, so its webhooks no longer reach the workspace."""

    binding = (
        GitHubInstallation.objects.select_related("workspace")
        .filter(installation_id=event.installation_id)
        .first()
    )
    label = f"installation {event.installation_id} ({event.account or 'unknown account'})"
    if binding is None:
        return (
            f"ignored: {label} is not bound to a workspace (a server operator binds it with "
            "manage.py tenancy bind-installation)"
        )
    workspace = binding.workspace
    archived: list[str] = []
    with transaction.atomic():
        connected = workspace.repositories.filter(
            kind=Repository.Kind.GITHUB, archived_at__isnull=True
        )
        gone: list[Repository]
        if event.event == "installation" and event.action == "deleted" and not event.removed:
            # The payload does not list what it had: all of its account's repositories.
            if event.account:
                connected = connected.filter(full_name__istartswith=f"{event.account}/")
            gone = list(connected)
        else:
            names = {n.lower() for n in event.removed}
            gone = [r for r in connected if r.full_name.lower() in names]
        for repo in gone:
            repository_archive(repository=repo, actor=SYSTEM)
            archived.append(repo.full_name)
        audit_record(
            action=f"github.{event.event}_{event.action}",
            actor=SYSTEM,
            workspace=workspace,
            target=Target("githubinstallation", str(event.installation_id), event.account),
            payload={
                "installation_id": event.installation_id,
                "account": event.account,
                "added": list(event.added),
                "removed": list(event.removed),
                "archived": archived,
            },
        )
        if event.event == "installation" and event.action == "deleted":
            installation_unbind(installation_id=event.installation_id)
    parts = [f"{label} {event.action} ({workspace.slug})"]
    if archived:
        parts.append(f"archived {', '.join(archived)}")
    if event.added:
        parts.append(f"{len(event.added)} repository(ies) may now be connected by an admin")
    if event.event == "installation" and event.action == "deleted":
        parts.append("unbound: its webhooks no longer reach the workspace")
    return "; ".join(parts)


def _done(delivery: WebhookDelivery, outcome: str) -> str:
    delivery.outcome = outcome[:200]
    delivery.save(update_fields=["outcome", "action"])
    return outcome
