"""Asking to publish a round's review, and posting it to GitHub. Never called by the pipeline.

Exactly once per round, whatever the selection: a PublishRecord unique on its round (a failed
attempt does not count) is claimed inside a transaction; only the caller that created the claim
talks to GitHub, after commit. Anchors are re-checked against the PR's current diff; if GitHub
still answers 422 the whole review is resubmitted once with every node folded into the body, so
nothing is dropped. Local repositories have no GitHub to post to: their reviews are downloaded
as a report instead. What would be posted is planned in reviews/services/publish_plans.py.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from config.safeurl import web_url_or_blank
from guardrails import rules
from guardrails.audit import APP, Target, audit_record
from guardrails.services.checkpoint import CheckpointResult, checkpoint, policy_for
from reviews.domain.space_status import SpaceStatus, can_execute_publish, publish_refusal
from reviews.live.events import emit
from reviews.models import PublishedComment, PublishRecord, ReviewRound, ReviewSpace
from reviews.services.github import github_client
from reviews.services.publish_plans import (
    LOCAL_REPOSITORY,
    AlreadyPublished,
    CurrentPlan,
    PublishError,
    already_published_message,
    current_commentable,
    node_records,
    publish_plan_current,
    publish_refusal_for,
    publishable_round,
    published_record,
    selection_checked,
)
from reviews.services.spaces import publish_requests_open, space_status_refresh
from reviews.sources.github_client import GitHubClient, GitHubError, GitHubValidationError
from reviews.sources.publish_plan import (
    PublishPlan,
    Selection,
    build_publish_plan,
    fold_everything,
    plan_digest,
)
from workspaces.rules import ReadOnlyError, archived_message

log = logging.getLogger(__name__)


def publish_request(
    *,
    space: ReviewSpace,
    selection: str,
    approve_on_ship: bool,
    actor: Any,
    seen_digest: str = "",
    http_request: Any = None,
    note: str = "",
) -> Any:
    """The one way to ask for a publish: plan against GitHub now, then the guardrails
    checkpoint with that exact plan. `seen_digest` (the preview a person read) must still be
    what would be posted; `note` is the requester's word to the approver. Returns the
    checkpoint's result. The page and the API both ask here: the page for every open finding,
    approving on Ship; the API for what the client chose."""
    space = ReviewSpace.objects.select_related("workspace", "pull_request__repository").get(
        pk=space.pk
    )
    if space.pull_request.repository.archived_at is not None:
        raise ReadOnlyError(archived_message(space.pull_request.repository))
    refusal = publish_refusal_for(space)
    if refusal is not None:
        raise (AlreadyPublished if published_record(_newest(space)) else PublishError)(refusal)
    current = publish_plan_current(
        space=space, selection=selection, approve_on_ship=approve_on_ship
    )
    payload = current.payload(space=space, selection=selection, approve_on_ship=approve_on_ship)
    if seen_digest and seen_digest != payload["plan_digest"]:
        raise PublishError(
            "The review changed while you were reading the preview: check it again, then "
            "request publishing."
        )

    def ask() -> CheckpointResult:
        return checkpoint(
            action="prPublish",
            actor=actor,
            workspace=space.workspace,
            target=Target("reviewspace", str(space.pk), str(space.pull_request)),
            payload=payload,
            http_request=http_request,
            note=note,
        )

    policy = rules.policy_for_requester(
        rules.Policy(policy_for(space.workspace, "prPublish").policy),
        by_agent=bool(getattr(actor, "quorum_agent", "")),
    )
    if policy == rules.Policy.ALLOW:
        # Posts at once: the claim must commit before GitHub is called, so no lock is held here
        # (the round's unique publication still refuses a second post).
        return ask()
    with transaction.atomic():
        # One open request per review: two people asking at once are serialised here, and the
        # second is told why.
        locked = ReviewSpace.objects.select_for_update().get(pk=space.pk)
        record = published_record(_newest(locked))
        if record is not None:
            raise AlreadyPublished(already_published_message(record))
        newest = _newest(locked)
        if publish_requests_open(str(space.pk), newest.number if newest else None).exists():
            raise PublishError(publish_refusal(SpaceStatus.AWAITING_APPROVAL))
        return ask()


def _newest(space: ReviewSpace) -> ReviewRound | None:
    return space.rounds.order_by("-number").first()


def _plan_summary(plan: PublishPlan) -> dict[str, Any]:
    return {
        "inline": plan.inline_ids,
        "folded": [{"node": f.node_id, "reason": str(f.reason)} for f in plan.folded],
        "skipped": [{"node": s.node_id, "reason": str(s.reason)} for s in plan.skipped],
    }


def _claim(
    *,
    space: ReviewSpace,
    review_round: ReviewRound,
    selection: str,
    approve_on_ship: bool,
    actor: Any,
    approval_request: Any = None,
) -> tuple[PublishRecord, bool]:
    """Create the round's record (we publish) or return the one that exists (someone else did,
    with whatever selection). A clean failure does not count: the next attempt claims anew."""
    approver = None
    if approval_request is not None:
        approver = (
            approval_request.decisions.filter(decision="approve")
            .select_related("approver")
            .order_by("-id")
            .first()
        )
    while True:
        try:
            with transaction.atomic():
                record = PublishRecord.objects.create(
                    space=space,
                    round=review_round,
                    selection=selection,
                    approve_on_ship=approve_on_ship,
                    head_sha=review_round.head_sha,
                    requested_by=actor if getattr(actor, "is_authenticated", False) else None,
                    approved_by=approver.approver if approver is not None else None,
                    approval_request=approval_request,
                )
                return record, True
        except IntegrityError:
            existing = published_record(review_round)
            if existing is not None:
                return existing, False
            # The claim we collided with failed cleanly in the meantime: claim again.


def publish_review(
    *,
    space: ReviewSpace,
    selection: str,
    approve_on_ship: bool,
    actor: Any,
    client: GitHubClient | None = None,
    request: Any = None,
    expected_digest: str | None = None,
    expected_head: str | None = None,
    approval_request: Any = None,
) -> PublishRecord:
    """Post the round's review to GitHub once; a repeated call returns the round's record,
    whatever its selection. An approval other than the one that published it is refused
    (AlreadyPublished): one approval, one GitHub review.

    With `expected_digest`/`expected_head` (what an approval bound), the plan is recomputed
    against GitHub now and nothing is posted unless it is exactly what was approved."""
    chosen = selection_checked(selection)
    space = ReviewSpace.objects.select_related("workspace", "pull_request__repository").get(
        pk=space.pk
    )
    if space.pull_request.repository.kind != "github":
        raise PublishError(LOCAL_REPOSITORY)
    existing = _existing_for(published_record(_newest(space)), approval_request)
    if existing is not None:
        return existing
    if not can_execute_publish(SpaceStatus(space.status)):
        raise PublishError(publish_refusal(SpaceStatus(space.status)))
    review_round, verdict, number = publishable_round(space)
    bound = None
    if expected_digest is not None or expected_head is not None:
        bound = _bound_plan(
            space, selection, approve_on_ship, client, expected_digest, expected_head
        )
    record, ours = _claim(
        space=space,
        review_round=review_round,
        selection=selection,
        approve_on_ship=approve_on_ship,
        actor=actor,
        approval_request=approval_request,
    )
    if not ours:
        existing = _existing_for(record, approval_request)
        assert existing is not None  # given a record, it returns it or refuses
        return existing
    return _post(
        record,
        bound.plan if bound is not None else None,
        verdict=verdict,
        number=number,
        selection=chosen,
        approve_on_ship=approve_on_ship,
        actor=actor,
        client=client,
        request=request,
        approval_request=approval_request,
    )


def _bound_plan(
    space: ReviewSpace,
    selection: str,
    approve_on_ship: bool,
    client: GitHubClient | None,
    expected_digest: str | None,
    expected_head: str | None,
) -> CurrentPlan:
    """The plan recomputed now, refused unless it is exactly what the approval bound."""
    bound = publish_plan_current(
        space=space, selection=selection, approve_on_ship=approve_on_ship, client=client
    )
    if expected_head is not None and bound.github_head != expected_head:
        raise PublishError(
            f"The pull request's head moved on GitHub to {bound.github_head[:10]} since the "
            "approval: request publishing again."
        )
    if expected_digest is not None and plan_digest(bound.plan) != expected_digest:
        raise PublishError(
            "What would be posted changed since it was approved (findings triaged or the "
            "diff moved): request publishing again."
        )
    return bound


def _post(
    record: PublishRecord,
    bound: PublishPlan | None,
    *,
    verdict: Any,
    number: int,
    selection: Selection,
    approve_on_ship: bool,
    actor: Any,
    client: GitHubClient | None,
    request: Any,
    approval_request: Any,
) -> PublishRecord:
    """Post the review of the round we claimed: the plan an approval bound (checked against
    GitHub already), or one planned now."""
    space, review_round = record.space, record.round
    pr = space.pull_request
    owner, name = pr.repository.full_name.split("/", 1)
    own_client = client is None
    client = client or github_client()
    try:
        if bound is not None:
            plan = bound  # exactly the approved plan, checked above
        else:
            plan = build_publish_plan(
                nodes=node_records(review_round),
                verdict=verdict.level.capitalize(),
                selection=selection,
                approve_on_ship=approve_on_ship,
                commentable=current_commentable(client, owner, name, number),
                rule=verdict.rule,
            )
        path = PublishRecord.Path.INLINE
        commit = review_round.head_sha
        post = partial(client.create_review, owner, name, number, commit_id=commit)
        # An approved publication carries its request's marker: if the answer is lost with
        # the worker, the sweeper finds the review by it (publish_lookup).
        marker = approval_marker(approval_request.pk) if approval_request is not None else ""
        try:
            response = post(body=plan.body + marker, event=plan.event, comments=plan.api_comments())
        except GitHubValidationError:
            if not plan.comments:
                raise
            log.warning("GitHub refused an inline anchor on %s; resubmitting folded", pr)
            plan = fold_everything(plan)
            path = PublishRecord.Path.FOLDED_FALLBACK
            response = post(body=plan.body + marker, event=plan.event, comments=[])
        numbered = _numbered_comments(client, owner, name, number, response, plan)
    except GitHubError as exc:
        uncertain = getattr(exc, "maybe_applied", False)
        publication_move(
            record,
            PublishRecord.State.UNCERTAIN if uncertain else PublishRecord.State.FAILED,
            error=str(exc),
        )
        _audit(record, actor, request, "publish.failed", error=str(exc))
        return record
    finally:
        if own_client:
            client.close()
    _posted(record, space, plan, path, response, numbered)
    return record


def _posted(
    record: PublishRecord,
    space: ReviewSpace,
    plan: PublishPlan,
    path: str,
    response: Any,
    numbered: list[tuple[int, int, str, str]],
) -> None:
    """GitHub took the review: the record says so, with the comments it numbered."""
    publication_move(
        record,
        PublishRecord.State.POSTED,
        path=path,
        event=plan.event,
        github_review_id=response.get("id"),
        # GitHub's answer is still input: the URL becomes a link on our pages.
        html_url=web_url_or_blank(response.get("html_url", "")),
        plan=_plan_summary(plan),
        posted_at=timezone.now(),
    )
    PublishedComment.objects.bulk_create(
        [
            PublishedComment(
                record=record,
                space=space,
                node_id=node_id,
                github_comment_id=comment_id,
                html_url=web_url_or_blank(url)[:500],
                body=body,
            )
            for node_id, comment_id, url, body in numbered
        ],
        ignore_conflicts=True,
    )
    # No audit event here: the guardrails checkpoint records the one `prPublish.executed`,
    # by the app identity, naming the requester and the approvers.
    space_status_refresh(space=space.pk)
    emit(space.pk, "review.published", url=record.html_url)


def approval_marker(request_id: int) -> str:
    """An invisible line at the end of an approved review's body naming its request."""
    return f"\n\n<!-- quorum:approval-request:{int(request_id)} -->"


def publish_lookup(payload: dict[str, Any], request_id: int) -> dict[str, Any] | None:
    """After the worker executing approval `request_id` stopped during the call: the review
    carrying its marker on the pull request (its result), or None when GitHub has none.
    Raises GitHubError when GitHub cannot be asked now (the next sweep asks again)."""
    space = ReviewSpace.objects.select_related("pull_request__repository").get(pk=payload["space"])
    pr = space.pull_request
    assert pr.number is not None  # a published review is a GitHub pull request's
    owner, name = pr.repository.full_name.split("/", 1)
    marker = approval_marker(request_id).strip()
    with github_client() as client:
        reviews = client.list_reviews(owner, name, pr.number)
    found = next(
        (r for r in reviews if isinstance(r.get("body"), str) and marker in r["body"]), None
    )
    if found is None:
        return None
    review_id = found.get("id") if isinstance(found.get("id"), int) else None
    url = web_url_or_blank(found.get("html_url", "") if isinstance(found, dict) else "")
    for record in _unsettled(request_id):
        publication_move(
            record,
            PublishRecord.State.POSTED,
            github_review_id=review_id,
            html_url=url,
            posted_at=timezone.now(),
            error="",
        )
    return {"github_review_id": review_id, "url": url, "round": payload["round"]}


def _unsettled(request_id: int) -> list[PublishRecord]:
    return list(
        PublishRecord.objects.filter(approval_request_id=request_id).exclude(
            state__in=(PublishRecord.State.FAILED, PublishRecord.State.POSTED)
        )
    )


def publication_move(record: PublishRecord, state: str, **fields: Any) -> None:
    """The only writer of PublishRecord.state: claimed → posted | failed | uncertain where
    publish_review posts, and claimed | uncertain → posted | failed where an execution whose
    worker died is settled (publish_lookup, publish_settled). `fields` go with it."""
    record.state = state
    for name, value in fields.items():
        setattr(record, name, value)
    record.save(update_fields=["state", *fields])


def publish_settled(request_id: int, executed: bool) -> None:
    """An execution settled after its worker stopped: its round's record follows. Not done,
    the claim is released (failed), so the round can be requested again; done (a person saw
    it on GitHub), it counts as posted."""
    records = _unsettled(request_id)
    for record in records:
        if executed:
            publication_move(record, PublishRecord.State.POSTED, posted_at=timezone.now())
        else:
            publication_move(
                record,
                PublishRecord.State.FAILED,
                error="its worker stopped during the call and the review is not on GitHub",
            )
    for space_id in {r.space_id for r in records}:
        transaction.on_commit(partial(space_status_refresh, space=space_id))


def _numbered_comments(
    client: GitHubClient, owner: str, name: str, number: int, review: Any, plan: PublishPlan
) -> list[tuple[int, int, str, str]]:
    """(node id, GitHub comment id, link, body) of each inline comment just posted, so a reply
    on GitHub finds its finding. GitHub's answer to the review does not carry them: they are
    listed, and matched by place and text. The review is posted whatever happens here; a
    comment not matched only means its replies are not recognised."""
    review_id = review.get("id") if isinstance(review, dict) else None
    if not plan.comments or not isinstance(review_id, int):
        return []
    try:
        listed = client.list_review_comments(owner, name, number, review_id)
    except GitHubError as exc:
        log.warning("the comments of review %s could not be listed: %s", review_id, exc)
        return []
    waiting: dict[tuple[Any, Any, Any], int | str] = {
        (c.path, c.line, c.body): c.node_id for c in plan.comments
    }
    numbered: list[tuple[int, int, str, str]] = []
    for comment in listed:
        body, comment_id, url = comment.get("body"), comment.get("id"), comment.get("html_url")
        node_id = waiting.pop((comment.get("path"), comment.get("line"), body), None)
        if isinstance(node_id, int) and isinstance(comment_id, int) and isinstance(body, str):
            numbered.append((node_id, comment_id, url if isinstance(url, str) else "", body))
    return numbered


def _existing_for(record: PublishRecord | None, approval_request: Any) -> PublishRecord | None:
    """The round's publication, returned to a repeated call; refused to another approval."""
    if record is None:
        return None
    if approval_request is not None and record.approval_request_id != approval_request.pk:
        raise AlreadyPublished(already_published_message(record))
    return record


def _audit(record: PublishRecord, actor: Any, request: Any, action: str, **extra: Any) -> None:
    """What GitHub answered an attempt that did not post: by the app, which made the call."""
    audit_record(
        action=action,
        actor=APP,
        workspace=record.space.workspace,
        target=Target("reviewspace", str(record.space_id), str(record.space.pull_request)),
        payload={
            "round": record.round.number,
            "head_sha": record.head_sha,
            "selection": record.selection,
            "event": record.event,
            "path": record.path,
            "github_review_id": record.github_review_id,
            "url": record.html_url,
            "requester": getattr(actor, "email", None),
            "approval_request": record.approval_request_id,
            **extra,
        },
        request=request,
    )
