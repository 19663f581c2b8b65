"""The round's `Quorum` check run on GitHub, kept in step with the round and its verdict.

Every change that shows on a check (the round starts, ends, is superseded or cancelled, its
verdict is decided or changes after triage) queues `check_run_sync_task` after commit; the task
reads the round as it is now and makes GitHub show that, so late or repeated tasks converge.
Exactly one check run per round: the round is claimed before the create (committed first), the
run's id is recorded once GitHub answers, and a claimed round whose answer was lost looks for
its run by name and external id before it would create another. Syncs of one round are
serialised by a PostgreSQL advisory lock, and a transaction queues at most one sync of a round.
With a token instead of an app, a `quorum` commit status carries the same outcome. Local
repositories post nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from config.background import QueueUnavailable, submit_now
from guardrails.audit import APP, Target, audit_record
from guardrails.rules import Policy
from guardrails.services.checkpoint import policy_for
from reviews.domain import check_runs as checks
from reviews.domain import types as t
from reviews.domain.report import verdict_section
from reviews.domain.round_states import RoundState
from reviews.domain.verdict import Verdict as DomainVerdict
from reviews.models import ReviewRound, Verdict
from reviews.services.github import github_client, github_configured
from reviews.sources.github_client import GitHubClient, GitHubNotFound

log = logging.getLogger(__name__)

_LOCK_SPACE = 0x51C4  # advisory lock namespace of check run syncs


def check_run_wanted(review_round: ReviewRound) -> bool:
    """Whether the round's check is posted at all: a GitHub repository, GitHub configured."""
    return review_round.space.pull_request.repository.kind == "github" and github_configured()


def check_run_enqueue(review_round: ReviewRound) -> None:
    """Queue a sync of the round's check once the surrounding transaction commits; never
    inline, and only for rounds that have a GitHub check."""
    if not check_run_wanted(review_round):
        return
    # One sync per round and transaction: it reads the round as committed, so a second one
    # (a round that finishes moves its state and decides its verdict in one transaction) would
    # only find GitHub already told. A sync queued inside a savepoint that rolled back is gone
    # from the list, so the next change queues its own.
    pending = transaction.get_connection().run_on_commit
    if any(_SyncAfterCommit(review_round.pk) == queued for _, queued, *_ in pending):
        return
    transaction.on_commit(_SyncAfterCommit(review_round.pk))


@dataclass(frozen=True, slots=True)
class _SyncAfterCommit:
    """The round's check sync, queued once the transaction commits."""

    round_id: int

    def __call__(self) -> None:
        try:
            submit_now("reviews.check_run_sync", self.round_id)
        except QueueUnavailable as exc:
            # The check shows the previous state until the round changes again (the sweeper
            # does not re-sync checks).
            log.warning("check run of round %s waits for the task queue: %s", self.round_id, exc)


def check_run_record(
    review_round: ReviewRound,
    *,
    claim: bool = False,
    run_id: int | None = None,
    posted: str | None = None,
) -> None:
    """The one writer of the round's check run columns: claim it before creating, then record
    GitHub's id, and the digest of what GitHub was told once it answered."""
    rows = ReviewRound.objects.filter(pk=review_round.pk)
    if posted is not None:
        review_round.check_run_posted = posted
        rows.update(check_run_posted=posted)
    if claim:
        review_round.check_run_claimed_at = timezone.now()
        rows.update(check_run_claimed_at=review_round.check_run_claimed_at)
    if run_id is not None:
        review_round.check_run_id = run_id
        rows.update(check_run_id=run_id)


@contextlib.contextmanager
def _serialised(round_id: int) -> Iterator[None]:
    """One sync of a round at a time (PostgreSQL session advisory lock; released on exit or
    when the connection dies). Other databases run one process: nothing to serialise."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_SPACE, round_id])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_SPACE, round_id])


def external_id(review_round: ReviewRound) -> str:
    """What tells this round's check run from another round's on the same commit."""
    return f"quorum-round-{review_round.pk}"


def review_url(review_round: ReviewRound) -> str:
    if not settings.QUORUM_PUBLIC_URL:
        return ""
    space = review_round.space
    path = reverse("reviews:detail", args=[space.workspace.slug, space.pk])
    return f"{settings.QUORUM_PUBLIC_URL}{path}?round={review_round.number}"


def _running(review_round: ReviewRound) -> str:
    names = sorted(review_round.streams.values_list("name", flat=True))
    who = f"reviewers: {', '.join(names)}" if names else "reviewers are being chosen"
    return (
        f"Quorum is reviewing this commit (round {review_round.number}, {review_round.tier} "
        f"tier; {who}). The verdict replaces this when the review finishes."
    )


def check_state(review_round: ReviewRound) -> checks.CheckState:
    """What the round's check shows now."""
    row = Verdict.objects.filter(round=review_round).first()
    level = t.VerdictLevel(row.level) if row is not None else None
    section = ""
    if row is not None:
        section = verdict_section(
            DomainVerdict(t.VerdictLevel(row.level), row.rule, row.confidence)
        )
    superseded = review_round.superseded_by
    return checks.check_state(
        state=RoundState(review_round.state),
        round_number=review_round.number,
        verdict=level,
        verdict_section=section,
        hold_fails=review_round.space.pull_request.repository.hold_fails_check,
        running=_running(review_round),
        superseded_by=superseded.number if superseded is not None else None,
        error=review_round.error,
    )


def _audit(review_round: ReviewRound, action: str, **payload: Any) -> None:
    space = review_round.space
    audit_record(
        action=action,
        actor=APP,
        workspace=space.workspace,
        target=Target("reviewspace", str(space.pk), str(space.pull_request)),
        payload={"round": review_round.number, "head_sha": review_round.head_sha, **payload},
    )


def check_run_sync(*, round_id: int, client: GitHubClient | None = None) -> str:
    """Make GitHub show the round as it is now. Returns what was done: created, updated,
    status, denied, local. A GitHubError propagates (the task retries it with backoff)."""
    with _serialised(round_id):
        review_round = ReviewRound.objects.select_related(
            "space__workspace", "space__pull_request__repository", "superseded_by"
        ).get(pk=round_id)
        repository = review_round.space.pull_request.repository
        if repository.kind != "github":
            return "local"
        if policy_for(review_round.space.workspace, "checkRun").policy == Policy.DENY:
            if review_round.check_run_claimed_at is None:
                _audit(review_round, "checkpoint.refused", reason="the workspace denies checkRun")
                check_run_record(review_round, claim=True)  # told once per round
            return "denied"
        wanted = check_state(review_round)
        owner, name = repository.full_name.split("/", 1)
        own_client = client is None
        client = client or github_client()
        try:
            digest = _digest(client, review_round, wanted)
            if digest == review_round.check_run_posted:
                return "unchanged"  # re-decided to the same verdict: GitHub already says it
            done = _post(client, review_round, wanted, owner, name)
        finally:
            if own_client:
                client.close()
        check_run_record(review_round, posted=digest)
        _audit(
            review_round,
            "checkRun.executed",
            posted=done,
            check_run_id=review_round.check_run_id,
            state=wanted.status,
            conclusion=wanted.conclusion,
        )
        return done


def _digest(client: GitHubClient, review_round: ReviewRound, wanted: checks.CheckState) -> str:
    """What a sync would tell GitHub, as a digest: the kind of report, its fields, its link."""
    url = review_url(review_round)
    if client.app_identity:
        told: Any = {"check": wanted.fields(url)}
    else:
        told = {"status": checks.commit_status(wanted), "url": url}
    text = json.dumps(told, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _post(
    client: GitHubClient,
    review_round: ReviewRound,
    wanted: checks.CheckState,
    owner: str,
    name: str,
) -> str:
    url = review_url(review_round)
    sha = review_round.head_sha
    if not client.app_identity:
        state, description = checks.commit_status(wanted)
        fields: dict[str, Any] = {
            "state": state,
            "context": checks.STATUS_CONTEXT,
            "description": description,
        }
        if url:
            fields["target_url"] = url
        client.create_commit_status(owner, name, sha, **fields)
        return "status"
    fields = wanted.fields(url)
    if review_round.check_run_id is not None:
        try:
            client.update_check_run(owner, name, review_round.check_run_id, **fields)
            return "updated"
        except GitHubNotFound:
            # The run is gone for this app (reinstalled, deleted): the round gets a new one
            # rather than a check stuck in its last state; the lookup below comes first, so a
            # retry after a lost create does not make two.
            log.warning("check run of %s is gone on GitHub: creating it again", review_round)
    if review_round.check_run_claimed_at is not None:
        # An earlier attempt claimed the round and may have created the run before its answer
        # was lost: find it rather than create a second.
        mine = external_id(review_round)
        found = [
            r
            for r in client.find_check_runs(owner, name, sha, checks.CHECK_NAME)
            if r.get("external_id") == mine and r.get("id") != review_round.check_run_id
        ]
        if found:
            check_run_record(review_round, run_id=int(found[0]["id"]))
            client.update_check_run(owner, name, int(found[0]["id"]), **fields)
            return "updated"
    check_run_record(review_round, claim=True)  # committed before GitHub is asked
    created = client.create_check_run(
        owner,
        name,
        name=checks.CHECK_NAME,
        head_sha=sha,
        external_id=external_id(review_round),
        **fields,
    )
    check_run_record(review_round, run_id=int(created["id"]))
    return "created"
