"""The review tools an agent calls through MCP, as plain synchronous functions of the caller.

Each one checks the caller's role with the same permission module as the pages and the API and
does its work through the same services, so an agent can do nothing its token's role may not:
a publish waits for a person, a confirmation of one's own finding is refused, and everything
that changes a review is in the audit trail under the agent's name. Errors a caller can act on
are ApplicationErrors with a message for them; the server turns them into tool errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.http import Http404

from config.application_errors import ApplicationError, ErrorCode
from guardrails import rules as guard_rules
from reviews.domain import consensus
from reviews.domain import types as t
from reviews.domain.fix_loop import LoopState, next_step
from reviews.domain.outcomes import PROCESS_BLOCK
from reviews.domain.round_states import RoundState
from reviews.domain.threads import Subject
from reviews.domain.wording import cohort_name
from reviews.mcp.answers import (
    BreaksAccepted,
    Finding,
    FindingDetail,
    Message,
    NodeResult,
    PublishResult,
    Review,
    ReviewStarted,
    ReviewSummary,
    Verdict,
)
from reviews.models import ReviewNode, ReviewRound, ReviewSpace, ThreadMessage
from reviews.models import Verdict as VerdictRow
from reviews.reports.json_export import review_json, thread_message_json
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page, space_get_for_user, thread_rows
from reviews.services import outside_agents, publishing
from reviews.services.api_breaks import api_breaks_accept
from reviews.services.requests import review_request
from reviews.services.threads import message_post, thread_get
from workspaces.models import Membership, Repository
from workspaces.permissions import membership_get, require
from workspaces.rules import Perm, ReadOnlyError, archived_message
from workspaces.services import api_token_authenticate


class Unauthenticated(ApplicationError):
    code = ErrorCode.UNAUTHENTICATED
    http_status = 401


class NotFound(ApplicationError):
    """Anything outside the caller's workspace looks like nothing at all."""

    code = ErrorCode.NOT_FOUND
    http_status = 404


@dataclass(frozen=True)
class Caller:
    user: Any  # `quorum_agent` set when the token is an agent's
    membership: Membership

    @property
    def slug(self) -> str:
        return self.membership.workspace.slug

    @property
    def label(self) -> str:
        agent = getattr(self.user, "quorum_agent", "")
        return f"agent {agent} for {self.user.email}" if agent else self.user.email


def caller_for(secret: str, slug: str) -> Caller:
    """The token's user in workspace `slug`, checked on every call (a revoked token stops at
    its next call). A non-member is told the workspace does not exist."""
    user = api_token_authenticate(secret or "")
    if user is None:
        raise Unauthenticated("The API token is missing, unknown or revoked.")
    try:
        return Caller(user, membership_get(user=user, slug=slug))
    except Http404:
        raise NotFound(f"No workspace {slug!r}.") from None


def _may(caller: Caller, perm: Perm, attempted: str) -> None:
    try:
        require(caller.membership, perm, attempted=attempted)
    except Exception as exc:  # PermissionDenied: the same words the API answers with
        if exc.__class__.__name__ == "PermissionDenied":
            raise ApplicationError(str(exc), code=ErrorCode.FORBIDDEN, http_status=403) from None
        raise


def _space(caller: Caller, space_id: int) -> ReviewSpace:
    try:
        return space_get_for_user(space_id=space_id, workspace_slug=caller.slug)
    except Http404:
        raise NotFound(f"No review {space_id} in this workspace.") from None


def _node(space: ReviewSpace, node_id: int) -> ReviewNode:
    node = ReviewNode.objects.filter(pk=node_id, space=space).select_related("stream").first()
    if node is None:
        raise NotFound(f"No finding {node_id} in review {space.pk}.")
    return node


# -- tools -------------------------------------------------------------------------------------


def request_review(
    caller: Caller,
    *,
    repository: str,
    number: int | None = None,
    base: str = "",
    head: str = "",
    tier: str | None = None,
    original_request: str = "",
) -> ReviewStarted:
    _may(caller, Perm.START_REVIEW, "start reviews")
    workspace = caller.membership.workspace
    query = Q(full_name=repository) | Q(local_path=repository)
    if repository.isdigit():
        query |= Q(pk=int(repository))
    repo = Repository.objects.filter(query, workspace=workspace).first()
    if repo is None:
        raise NotFound(
            f"No repository {repository!r} in this workspace: give its id, its GitHub name "
            "(owner/name) or its local path as Settings → Repositories lists it."
        )
    if tier is not None and tier not in t.Tier.__members__.values():
        raise ApplicationError(
            f"Unknown tier {tier!r}; use one of {', '.join(t.Tier)}.", code=ErrorCode.BAD_TIER
        )
    review_round = review_request(
        repository=repo,
        actor=caller.user,
        number=number,
        base=base,
        head=head,
        tier=tier,
        original_request=original_request,
    )
    return ReviewStarted(
        space=review_round.space_id,
        round=review_round.number,
        state=review_round.state,
        wait=f"call wait_for_review(space={review_round.space_id}, round={review_round.number})",
    )


def round_of(caller: Caller, space_id: int, number: int | None) -> ReviewRound:
    space = _space(caller, space_id)
    rounds = space.rounds.order_by("-number")
    found = rounds.filter(number=number).first() if number else rounds.first()
    if found is None:
        raise NotFound(f"Review {space_id} has no round {number or ''}".strip() + ".")
    return found


def _next_step(data: dict[str, Any], fix_list: list[str]) -> str:
    verdict, round_, flag = data["verdict"], data["round"], data["space"]["flag"] or {}
    return next_step(
        LoopState(
            round_finished=round_ is not None and round_["state"] == RoundState.FINISHED,
            flagged=bool(data["space"]["flagged_for_human"]),
            flag_reason=flag.get("reason") or "",
            waiting_for_request=any(s["error"] == PROCESS_BLOCK for s in data["streams"]),
            verdict=t.VerdictLevel(verdict["level"]) if verdict else None,
            verdict_rule=verdict["rule"] if verdict else "",
            fix_list=bool(fix_list),
        )
    )


def get_review(caller: Caller, space_id: int, round_number: int | None = None) -> Review:
    space = _space(caller, space_id)
    page = review_page(space=space, round_number=round_number)
    data = review_json(page)
    nodes = [n for n in data["nodes"] if n["duplicate_of"] is None]
    open_nodes = [
        n for n in nodes if n["status"] in (t.NodeStatus.OPEN, t.NodeStatus.CONSENSUS_READY)
    ]
    fix_list = [
        f"#{n['id']} {n['priority']} {n['title']}"
        + (f" ({n['anchor']['path']}:{n['anchor']['start_line']})" if n["anchor"] else "")
        + f": {n['fix']['fix_prompt'] or n['body'][:400]}"
        for n in open_nodes
        if n["priority"] in (t.Priority.P0, t.Priority.P1) and n["type"] != t.NodeType.QUESTION
    ]
    verdict = data["verdict"]
    round_ = data["round"]
    delta = (round_ or {}).get("delta") or {}
    return Review(
        space=space.pk,
        pull_request=str(space.pull_request),
        round=round_["number"] if round_ else None,
        state=round_["state"] if round_ else "none",
        stage=round_["stage"] if round_ else "",
        verdict=Verdict(
            level=verdict["level"],
            review_state=verdict["state"],
            rule=verdict["rule"],
            confidence=verdict["confidence"],
        )
        if verdict
        else None,
        axes={a["axis"]: a["result"] for a in data["axes"]},
        cohorts=[cohort_name(c) for c in page.round.stats.cohort_list][:20] if page.round else [],
        delta=delta.get("summary", "") or "",
        fixed=[
            f"{g['priority']} {g['title']} ({g['location']})"
            for g in delta.get("gone_findings", [])
        ],
        still_open=delta.get("still_open"),
        new=delta.get("new"),
        open_by_priority={
            p.value: sum(1 for n in open_nodes if n["priority"] == p.value) for p in t.Priority
        },
        fix_list=fix_list,
        findings=len(nodes),
        flagged_for_person=bool(data["space"]["flagged_for_human"]),
        next_step=_next_step(data, fix_list),
    )


def _finding(n: dict[str, Any], talk: dict[str, int], duplicates: list[int]) -> Finding:
    anchor = n["anchor"] or {}
    where = (
        f"{anchor['path']}:{anchor['start_line']}-{anchor['end_line']}"
        if anchor
        else "whole change"
    )
    return Finding(
        id=n["id"],
        title=n["title"],
        type=n["type"],
        priority=n["priority"],
        status=n["status"],
        where=where,
        author=n["stream"],
        found_by=n["reviewers"] or [n["stream"]],
        confirmed_by=sorted({c["agent"] for c in n["confirmations"]}),
        duplicates=duplicates,
        duplicate_of=n["duplicate_of"],
        delta=n["delta"],
        fix_prompt=n["fix"]["fix_prompt"],
        messages=talk.get(Subject.node(n["id"]).key, 0),
    )


def list_review_nodes(
    caller: Caller,
    space_id: int,
    *,
    round_number: int | None = None,
    status: str = "",
    priority: str = "",
    path: str = "",
    include_duplicates: bool = False,
) -> list[Finding]:
    """Each defect once (its canonical finding, with the ids merged into it), as get_review
    counts them; `include_duplicates` adds the merged rows, each naming its canonical."""
    space = _space(caller, space_id)
    data = review_json(review_page(space=space, round_number=round_number))
    talk = {thread["subject"]: len(thread["messages"]) for thread in data["threads"]}
    merged: dict[int, list[int]] = {}
    for n in data["nodes"]:
        if n["duplicate_of"] is not None:
            merged.setdefault(n["duplicate_of"], []).append(n["id"])
    found = []
    for n in data["nodes"]:
        if n["duplicate_of"] is not None and not include_duplicates:
            continue
        if status and n["status"] != status:
            continue
        if priority and n["priority"] != priority:
            continue
        if path and not ((n["anchor"] or {}).get("path") or "").startswith(path):
            continue
        found.append(_finding(n, talk, sorted(merged.get(n["id"], []))))
    return found


def get_review_node(caller: Caller, space_id: int, node_id: int) -> FindingDetail:
    space = _space(caller, space_id)
    node = _node(space, node_id)
    data = review_json(review_page(space=space, round_number=node.stream.round.number))
    talk = {thread["subject"]: len(thread["messages"]) for thread in data["threads"]}
    row = next(n for n in data["nodes"] if n["id"] == node.pk)
    merged = sorted(n["id"] for n in data["nodes"] if n["duplicate_of"] == node.pk)
    return FindingDetail(
        **_finding(row, talk, merged).model_dump(),
        body=node.body,
        reasoning=node.reasoning,
        confidence=node.confidence,
        category=node.category,
        replacement_lines=row["fix"]["replacement_lines"],
        round=node.stream.round.number,
    )


def list_reviews(
    caller: Caller,
    *,
    repository: str = "",
    number: int | None = None,
    status: str = "",
    flagged: bool | None = None,
    limit: int = 50,
) -> list[ReviewSummary]:
    """The workspace's reviews, newest first."""
    spaces = ReviewSpace.objects.filter(workspace=caller.membership.workspace).select_related(
        "pull_request__repository"
    )
    if repository:
        spaces = spaces.filter(
            Q(pull_request__repository__full_name__iexact=repository)
            | Q(pull_request__repository__local_path=repository)
        )
    if number is not None:
        spaces = spaces.filter(pull_request__number=number)
    if status:
        spaces = spaces.filter(status=status)
    if flagged is not None:
        spaces = spaces.filter(flagged_for_human=flagged)
    out = []
    for space in spaces.order_by("-updated_at")[: max(1, min(limit, 200))]:
        newest = space.rounds.order_by("-number").select_related("verdict").first()
        verdict = getattr(newest, "verdict", None) if newest is not None else None
        out.append(
            ReviewSummary(
                space=space.pk,
                repository=str(space.pull_request.repository),
                pull_request=str(space.pull_request),
                status=space.status,
                round=newest.number if newest else None,
                round_state=newest.state if newest else None,
                verdict=verdict.level if verdict else None,
                flagged_for_person=space.flagged_for_human,
            )
        )
    return out


def add_review_node(caller: Caller, space_id: int, finding: dict[str, Any]) -> NodeResult:
    _may(caller, Perm.TRIAGE_NODES, "add findings")
    review_round = round_of(caller, space_id, None)
    node = outside_agents.node_add_outside(
        review_round=review_round, user=caller.user, payload=finding
    )
    return NodeResult(id=node.pk, status=node.status)


def act_on_node(
    caller: Caller, space_id: int, node_id: int, action: consensus.Action, reason: str = ""
) -> NodeResult:
    _may(caller, Perm.TRIAGE_NODES, f"{action} findings")
    node = _node(_space(caller, space_id), node_id)
    note = None
    if node.duplicate_of_id is not None:
        # A merged row takes no action of its own: it goes to the finding it repeats.
        note = f"Finding {node.pk} repeats finding {node.duplicate_of_id}: {action} applied there."
        node = _node(node.space, node.duplicate_of_id)
    try:
        node = outside_agents.node_act_outside(
            node=node, action=action, user=caller.user, reason=reason
        )
    except consensus.ConsensusError as exc:
        raise ApplicationError(str(exc), code=ErrorCode.REFUSED, http_status=409) from None
    return NodeResult(id=node.pk, status=node.status, note=note)


def accept_api_breaks(caller: Caller, space_id: int, reason: str) -> BreaksAccepted:
    """A person's token accepts the API breaks of the review's newest round (an agent's is
    refused by the service)."""

    _may(caller, Perm.TRIAGE_NODES, "accept an API break")
    space = _space(caller, space_id)
    review_round = space.rounds.order_by("-number").first()
    if review_round is None:
        raise NotFound(f"Review {space.pk} has no round yet.")
    row = api_breaks_accept(review_round=review_round, user=caller.user, reason=reason)
    verdict = VerdictRow.objects.filter(round=review_round).values_list("level", flat=True)
    return BreaksAccepted(
        round=review_round.number,
        result=row.result,
        accepted=row.details["accepted"]["breaks"],
        verdict=verdict.first(),
    )


def publish_review_to_github(
    caller: Caller,
    space_id: int,
    *,
    selection: str = "consensus",
    approve_on_ship: bool = False,
    note: str = "",
) -> PublishResult:
    _may(caller, Perm.REQUEST_PUBLISH, "request publishing")
    space = _space(caller, space_id)
    result = publishing.publish_request(
        space=space,
        selection=selection,
        approve_on_ship=approve_on_ship,
        actor=caller.user,
        note=note,
    )
    if result.outcome is guard_rules.CheckpointOutcome.REFUSED:
        return PublishResult(outcome="refused", detail=result.reason)
    if result.outcome is guard_rules.CheckpointOutcome.PENDING:
        return PublishResult(
            outcome="pending approval by a person",
            detail=f"{result.reason} A person with the approver role decides in Quorum.",
            approval_request=result.request.pk,
        )
    return PublishResult(outcome="published", detail="Posted to GitHub.")


def report(caller: Caller, space_id: int, round_number: int) -> str:
    space = _space(caller, space_id)
    return report_markdown(review_page(space=space, round_number=round_number))


def review_document(caller: Caller, space_id: int, round_number: int) -> dict[str, Any]:
    space = _space(caller, space_id)
    return review_json(review_page(space=space, round_number=round_number))


# -- threads -----------------------------------------------------------------------------------


def _message(data: dict[str, Any]) -> Message:
    github, proposal = data["github"], data["proposal"]
    on_github = None
    if github is not None:
        where = "came from GitHub" if data["source"] == "github" else "posted on GitHub"
        on_github = f"{where}: {github['url']}" if github["url"] else where
    return Message(
        id=data["id"],
        subject=data["subject"],
        source=data["source"],
        author=data["author"],
        body=data["body"],
        created_at=data["created_at"],
        edited=data["edited_at"] is not None,
        in_reply_to=data["in_reply_to"],
        on_github=on_github,
        proposal=f"{proposal['kind']} ({proposal['state']})" if proposal else None,
    )


def _thread(space: ReviewSpace, subject: str) -> Any:

    return thread_get(space=space, key=subject)


def list_thread(caller: Caller, space_id: int, subject: str = "") -> list[Message]:

    space = _space(caller, space_id)
    key = _thread(space, subject).key if subject else None
    return [_message(thread_message_json(m)) for m in thread_rows(space=space, key=key)]


def reply(
    caller: Caller, space_id: int, subject: str, body: str, in_reply_to: int | None = None
) -> Message:

    _may(caller, Perm.DISCUSS, "post in review threads")
    space = _space(caller, space_id)
    repository = space.pull_request.repository
    if repository.archived_at is not None:  # as the API and the pages: read-only
        raise ReadOnlyError(archived_message(repository))
    thread = _thread(space, subject)
    answered = None
    if in_reply_to is not None:
        answered = ThreadMessage.objects.filter(pk=in_reply_to, space=space).first()
        if answered is None:
            raise NotFound(f"No message {in_reply_to} in review {space.pk}.")
    message = message_post(thread=thread, user=caller.user, body=body, in_reply_to=answered)
    return _message(thread_message_json(message))
