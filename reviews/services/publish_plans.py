"""What publishing a round would post, and whether it may be asked for now.

The plan is computed against the pull request as GitHub reports it at the time (its head and
diff), from the round's current findings; the refusals (a local repository, a round already
on GitHub) are worded here for the pages, the API and the publisher alike. Asking to publish
(publish_request) and posting (publish_review) are in reviews/services/publishing.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from config.application_errors import ApplicationError, ErrorCode
from reviews.domain import consensus
from reviews.domain.space_status import SpaceStatus, can_request_publish, publish_refusal
from reviews.models import PublishRecord, ReviewNode, ReviewRound, ReviewSpace
from reviews.selectors import node_view
from reviews.services.github import github_client
from reviews.services.outside_agents import reviewer_labels
from reviews.sources.diffs import CommentableLines, parse_unified_diff
from reviews.sources.github_client import DiffTooLarge, GitHubClient, GitHubError
from reviews.sources.publish_plan import (
    NodeRecord,
    PublishPlan,
    Selection,
    build_publish_plan,
    plan_digest,
    plan_document,
)


class PublishError(ApplicationError):
    """Publishing is not possible now; the message says why."""

    code = ErrorCode.PUBLISH_REFUSED


class AlreadyPublished(PublishError):
    """The round is on GitHub already (or on its way): it is never posted twice."""

    code = ErrorCode.ALREADY_PUBLISHED
    http_status = 409


LOCAL_REPOSITORY = (
    "This review is of a local repository: there is no pull request on GitHub to publish to. "
    "Download the report (markdown or JSON) from the review instead."
)


def published_record(review_round: ReviewRound | None) -> PublishRecord | None:
    """The round's one publication (posted, being posted, or with a lost answer), if any."""
    if review_round is None:
        return None
    return (
        PublishRecord.objects.filter(round=review_round, legacy_duplicate=False)
        .exclude(state=PublishRecord.State.FAILED)
        .select_related("round", "requested_by", "approved_by")
        .first()
    )


def already_published_message(record: PublishRecord) -> str:
    number = record.round.number
    if record.state == PublishRecord.State.POSTED:
        return (
            f"Round {number} was already published to GitHub: "
            f"{record.html_url or 'GitHub returned no link'}. A new push starts a round that "
            "can be published."
        )
    if record.state == PublishRecord.State.CLAIMED:
        return f"Round {number} is being published to GitHub right now."
    return (
        f"Round {number} may already be on GitHub: the answer to the last attempt was lost "
        f"({record.error or 'no answer'}). It is never posted twice: check the pull request on "
        "GitHub."
    )


def publish_refusal_for(space: ReviewSpace) -> str | None:
    """Why nobody can ask to publish this review now, in the reader's words; None if they can."""
    if space.pull_request.repository.kind != "github":
        return LOCAL_REPOSITORY
    record = published_record(space.rounds.order_by("-number").first())
    if record is not None:
        return already_published_message(record)
    status = SpaceStatus(space.status)
    return None if can_request_publish(status) else publish_refusal(status)


def node_records(review_round: ReviewRound) -> list[NodeRecord]:
    nodes = (
        ReviewNode.objects.filter(round=review_round, duplicate_of__isnull=True)
        .select_related("stream")
        .prefetch_related("confirmations")
        .order_by("priority", "-confidence", "id")
    )
    views = [node_view(node, list(node.confirmations.all())) for node in nodes]
    labels = reviewer_labels({name for view in views for name in view.reviewers})
    records = []
    for node, view in zip(nodes, views, strict=True):
        records.append(
            NodeRecord(
                id=node.pk,
                status=node.status,
                title=node.title,
                body=node.body,
                priority=node.priority,
                type=node.type,
                path=node.path or None,
                start_line=node.start_line,
                end_line=node.end_line,
                side=node.side,
                replacement_lines=node.replacement_lines,
                # The publisher checks peer confirmation itself, not the status field.
                confirmed_by_peer=consensus.is_peer_confirmed(view),
                reviewers=[labels.get(name, name) for name in view.reviewers],
                author=view.agent,
                confirmed_by=view.confirmed_by,
            )
        )
    return records


def current_commentable(
    client: GitHubClient, owner: str, name: str, number: int
) -> CommentableLines:
    try:
        text = client.get_pull_diff(owner, name, number)
    except DiffTooLarge:
        # Rebuild a diff from the files list: its patches start at the first @@.
        parts = []
        for f in client.list_pull_files(owner, name, number):
            if f.get("patch"):
                new = f["filename"]
                old = f.get("previous_filename") or new
                header = f"diff --git a/{old} b/{new}\n--- a/{old}\n+++ b/{new}\n"
                parts.append(f"{header}{f['patch']}\n")
        text = "".join(parts)
    return CommentableLines.from_files(parse_unified_diff(text))


@dataclass(frozen=True)
class CurrentPlan:
    """What a publish would post right now, against the PR as GitHub reports it."""

    plan: PublishPlan
    round_number: int
    head_sha: str  # the round's head: what the reviewers read
    github_head: str  # the PR's head on GitHub when the plan was computed

    def payload(self, *, space: ReviewSpace, selection: str, approve_on_ship: bool) -> dict:
        """The prPublish payload an approval binds: the plan itself, its digest, the heads."""
        return {
            "space": space.pk,
            "round": self.round_number,
            "head_sha": self.head_sha,
            "github_head": self.github_head,
            "selection": selection,
            "event": self.plan.event,
            "approve_on_ship": approve_on_ship,
            "plan_digest": plan_digest(self.plan),
            "plan": plan_document(self.plan),
        }


def publishable_round(space: ReviewSpace) -> tuple[ReviewRound, Any, int]:
    """The newest round, its verdict and the pull request's number on GitHub."""
    review_round = space.rounds.order_by("-number").first()
    verdict = getattr(review_round, "verdict", None) if review_round is not None else None
    if review_round is None or verdict is None:
        raise PublishError("This review has no verdict yet.")
    pr = space.pull_request
    if pr.number is None or pr.repository.kind != "github":
        raise PublishError(LOCAL_REPOSITORY)
    return review_round, verdict, pr.number


def selection_checked(selection: str) -> Selection:
    match selection:
        case "all_open" | "consensus":
            return selection
    raise PublishError(f"Unknown selection {selection!r}; use all_open or consensus.")


def publish_plan_current(
    *,
    space: ReviewSpace,
    selection: str,
    approve_on_ship: bool,
    client: GitHubClient | None = None,
) -> CurrentPlan:
    """Ask GitHub for the PR's head and diff, and plan the review from the current findings.
    A PR that moved past the reviewed commit cannot be published: it needs a new round."""
    chosen = selection_checked(selection)
    space = ReviewSpace.objects.select_related("workspace", "pull_request__repository").get(
        pk=space.pk
    )
    review_round, verdict, number = publishable_round(space)
    pr = space.pull_request
    owner, name = pr.repository.full_name.split("/", 1)
    own_client = client is None
    try:
        client = client or github_client()
        github_head = str((client.get_pull(owner, name, number).get("head") or {}).get("sha"))
        if github_head != review_round.head_sha:
            raise PublishError(
                f"The pull request's head on GitHub is now {github_head[:10]}, not the reviewed "
                f"{review_round.head_sha[:10]}: a new review round is needed before publishing."
            )
        commentable = current_commentable(client, owner, name, number)
    except GitHubError as exc:
        raise PublishError(f"GitHub could not be asked about {pr}: {exc}") from exc
    finally:
        if own_client and client is not None:
            client.close()
    plan = build_publish_plan(
        nodes=node_records(review_round),
        verdict=verdict.level.capitalize(),
        selection=chosen,
        approve_on_ship=approve_on_ship,
        commentable=commentable,
        rule=verdict.rule,
    )
    return CurrentPlan(plan, review_round.number, review_round.head_sha, github_head)
