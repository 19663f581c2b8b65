"""The registry of action classes: what each mutates, its payload, how it runs.

An executor receives the approved payload and the requester and returns a JSON-able result;
it must be idempotent, because a redelivered task may call it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class PlanComment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    line: int
    side: str
    body: str
    start_line: int | None = None
    start_side: str | None = None


class PlanDocument(BaseModel):
    """What GitHub would receive; its digest is what the approval binds."""

    model_config = ConfigDict(extra="forbid")

    event: str
    body: str
    comments: list[PlanComment]


class PrPublishPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    space: int
    round: int
    head_sha: str = Field(min_length=7, max_length=40)
    github_head: str = Field(min_length=7, max_length=40)
    selection: str = Field(pattern="^(all_open|consensus)$")
    event: str = Field(pattern="^(APPROVE|REQUEST_CHANGES|COMMENT)$")
    approve_on_ship: bool
    plan_digest: str = Field(pattern="^[0-9a-f]{64}$")
    plan: PlanDocument


def _late(target: str) -> Callable[..., Any]:
    """`module.function`, imported when first called: the review services import guardrails,
    so guardrails names theirs by path."""

    def call(*args: Any) -> Any:
        module, _, name = target.rpartition(".")
        return getattr(import_module(module), name)(*args)

    return call


def _space(payload: dict[str, Any]):
    from reviews.models import ReviewSpace

    return ReviewSpace.objects.select_related("pull_request__repository").get(pk=payload["space"])


def _publish(payload: dict[str, Any], requester: Any) -> dict[str, Any]:
    from reviews.services.publishing import publish_review
    from reviews.sources.publish_plan import document_digest

    # The stored plan must still be the one its digest names, and publish_review recomputes the
    # plan against GitHub and refuses unless it has that same digest and the same PR head.
    if document_digest(payload["plan"]) != payload["plan_digest"]:
        raise ActionRefused("The stored publish plan does not match its digest.")
    space = _space(payload)
    latest = space.rounds.order_by("-number").values_list("number", flat=True).first()
    if latest != payload["round"]:
        raise ActionRefused(
            f"Round {payload['round']} was approved but round {latest} is now current: "
            "request publishing again."
        )
    record = publish_review(
        space=space,
        selection=payload["selection"],
        approve_on_ship=payload["approve_on_ship"],
        actor=requester,
        expected_digest=payload["plan_digest"],
        expected_head=payload["github_head"],
        approval_request=_executing_request("prPublish", payload),
    )
    if record.state != record.State.POSTED:
        raise RuntimeError(record.error or f"publishing ended {record.state}")
    return {
        "github_review_id": record.github_review_id,
        "url": record.html_url,
        "path": record.path,
        "round": payload["round"],
    }


def _executing_request(action: str, payload: dict[str, Any]):
    """The approval request this payload is executing for; None on the `allow` path."""
    from guardrails.models import ApprovalRequest
    from guardrails.services import payload_hash

    return ApprovalRequest.objects.filter(
        action_class=action, payload_hash=payload_hash(action, payload), status="executing"
    ).first()


def _current_head(payload: dict[str, Any]) -> str:
    """The PR's head as GitHub reports it now (not as our last webhook said)."""
    from reviews.services.github import github_client

    space = _space(payload)
    pr = space.pull_request
    owner, name = pr.repository.full_name.split("/", 1)
    with github_client() as client:
        return str((client.get_pull(owner, name, pr.number).get("head") or {}).get("sha") or "")


def _publish_scope(payload: dict[str, Any]) -> tuple[int | None, str, str]:
    """(workspace id, target type, target id) the payload acts on."""
    from reviews.models import ReviewSpace

    workspace_id = (
        ReviewSpace.objects.filter(pk=payload["space"])
        .values_list("workspace_id", flat=True)
        .first()
    )
    return workspace_id, "reviewspace", str(payload["space"])


class IssueCreatePayload(BaseModel):
    """A reviewer's ticket filed as a GitHub issue, exactly this title and body, in exactly this
    repository. `head_sha` binds the ticket and the repository (reviews/services/notes.py)."""

    model_config = ConfigDict(extra="forbid")

    ticket: int
    space: int
    repository: str = Field(pattern=r"^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$")
    title: str = Field(min_length=1, max_length=256)
    body: str = Field(max_length=65_536)
    head_sha: str = Field(pattern="^[0-9a-f]{40}$")


class ThreadAnswerPayload(BaseModel):
    """A reviewer's answer to a question asked on GitHub, posted as exactly this body: a reply
    in the conversation of review comment `reply_to`, or (None) a comment on pull request
    `number`. `head_sha` binds the answer, the question and where it goes
    (reviews/services/github_replies.py)."""

    model_config = ConfigDict(extra="forbid")

    space: int
    answer: int
    question: int
    repository: str = Field(pattern=r"^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$")
    number: int = Field(ge=1)
    reply_to: int | None = Field(default=None, ge=1)
    body: str = Field(min_length=1, max_length=65_536)
    head_sha: str = Field(pattern="^[0-9a-f]{40}$")


class PolicySettingModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    policy: str = Field(pattern="^(allow|require_approval|deny)$")
    approvals_required: int = Field(ge=1, le=5)
    expires_after_minutes: int = Field(ge=5, le=7 * 24 * 60)


class PolicyChangePayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workspace: int
    action_class: str = Field(max_length=50)
    head_sha: str = Field(pattern="^[0-9a-f]{40}$")  # digest of the setting it replaces
    before: PolicySettingModel
    after: PolicySettingModel


def _policy_now(payload: dict[str, Any]) -> str:
    from guardrails.services import _policy_setting, policy_digest, policy_for
    from workspaces.models import Workspace

    workspace = Workspace.objects.get(pk=payload["workspace"])
    return policy_digest(_policy_setting(policy_for(workspace, payload["action_class"])))


def _policy_change(payload: dict[str, Any], requester: Any) -> dict[str, Any]:
    from guardrails.services import policy_apply
    from workspaces.models import Workspace

    policy_apply(
        workspace=Workspace.objects.get(pk=payload["workspace"]),
        action=payload["action_class"],
        before=payload["before"],
        after=payload["after"],
        actor=requester,
    )
    return {"action_class": payload["action_class"], "policy": payload["after"]}


def _policy_lookup(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The policy as it stands: applied if it is the requested setting."""
    from guardrails.services import policy_digest

    after = PolicySettingModel.model_validate(payload["after"]).model_dump()
    if _policy_now(payload) != policy_digest(after):
        return None
    return {"action_class": payload["action_class"], "policy": payload["after"]}


def _policy_scope(payload: dict[str, Any]) -> tuple[int | None, str, str]:
    return payload["workspace"], "actionpolicy", payload["action_class"]


class CheckRunPayload(BaseModel):
    """The `Quorum` check run (or commit status) of one round, as the round stands now."""

    model_config = ConfigDict(extra="forbid")

    space: int
    round: int
    head_sha: str = Field(pattern="^[0-9a-f]{40}$")


def _check_run(payload: dict[str, Any], requester: Any) -> dict[str, Any]:
    from reviews.services.check_runs import check_run_sync

    return {"posted": check_run_sync(round_id=payload["round"])}


def _check_run_head(payload: dict[str, Any]) -> str:
    from reviews.models import ReviewRound

    return (
        ReviewRound.objects.filter(pk=payload["round"]).values_list("head_sha", flat=True).first()
        or ""
    )


class ActionRefused(Exception):
    """The executor will not run this payload; the message says why."""


@dataclass(frozen=True)
class ActionClass:
    name: str
    mutating: bool
    payload: type[BaseModel]
    execute: Callable[[dict[str, Any], Any], dict[str, Any]]
    current_head: Callable[[dict[str, Any]], str]
    # (workspace id, target type, target id) of what the payload would change.
    scope: Callable[[dict[str, Any]], tuple[int | None, str, str]]
    description: str
    # Who may decide its requests, and whether anyone must be present to ask.
    decide_perm: str = "decide_approval"
    needs_presence: bool = True
    # Fixed policy: not configurable per workspace (loosening itself needs a second person).
    fixed_policy: str | None = None
    # The policy of a workspace that set none (None: require_approval for a mutating action).
    default_policy: str | None = None
    # The policies a workspace may choose.
    policies: tuple[str, ...] = ("allow", "require_approval", "deny")
    # After an execution's lease ran out (its worker died mid-call): what it did, looked up
    # where it acts — (payload, request id) → the result if it took effect, None if it did
    # not; raises if that cannot be told now. None: only a person can tell (they resolve it).
    lookup: Callable[[dict[str, Any], int], dict[str, Any] | None] | None = None
    # Told (request id, executed?) when such an execution is settled, by the lookup or by a
    # person, so what the action keeps of its own (a publication's record) follows.
    settled: Callable[[int, bool], None] | None = None
    # Its executor writes to GitHub (a review, an issue, a reply, a check run or commit
    # status): the audit trail's "Who published what" lists its `<name>.executed` events.
    # tests/guardrails/test_github_writers.py holds every class to it, from the code.
    writes_to_github: bool = False


REGISTRY: dict[str, ActionClass] = {
    "prPublish": ActionClass(
        name="prPublish",
        mutating=True,
        payload=PrPublishPayload,
        execute=_publish,
        current_head=_current_head,
        scope=_publish_scope,
        description="Publish a review to GitHub",
        writes_to_github=True,
        lookup=_late("reviews.services.publishing.publish_lookup"),
        settled=_late("reviews.services.publishing.publish_settled"),
    ),
    # Same approval rules as publishing: a second person, connected, decides.
    "issueCreate": ActionClass(
        name="issueCreate",
        mutating=True,
        payload=IssueCreatePayload,
        execute=_late("reviews.services.notes.ticket_issue_execute"),
        current_head=_late("reviews.services.notes.ticket_issue_head"),
        scope=_late("reviews.services.notes.ticket_issue_scope"),
        description="Create a GitHub issue from a reviewer's ticket",
        writes_to_github=True,
    ),
    "policyChange": ActionClass(
        name="policyChange",
        mutating=True,
        payload=PolicyChangePayload,
        execute=_policy_change,
        current_head=_policy_now,
        scope=_policy_scope,
        description="Loosen a guardrail policy",
        decide_perm="manage_rules",
        # A settings change can wait in the inbox: nothing is lost while nobody is there.
        needs_presence=False,
        fixed_policy="require_approval",
        lookup=lambda payload, _request_id: _policy_lookup(payload),
    ),
    # A reviewer's answer to a question asked on GitHub (`@quorum`): posted like a publish.
    # The workspace may allow it without approval (then the app posts it when the reviewer
    # answers). It can wait in the inbox: the person who asked is on GitHub, not here.
    "threadAnswer": ActionClass(
        name="threadAnswer",
        mutating=True,
        payload=ThreadAnswerPayload,
        execute=_late("reviews.services.github_replies.answer_execute"),
        current_head=_late("reviews.services.github_replies.answer_head"),
        scope=_late("reviews.services.github_replies.answer_scope"),
        description="Post a reviewer's answer to a question asked on GitHub",
        writes_to_github=True,
        needs_presence=False,
    ),
    # Posted by the app on every round's head commit: it reports the verdict and posts nothing
    # on the pull request, so it is not behind the publish approval. A workspace can switch it
    # off (deny); nobody is there to approve each update of a running round.
    "checkRun": ActionClass(
        name="checkRun",
        mutating=True,
        payload=CheckRunPayload,
        execute=_check_run,
        current_head=_check_run_head,
        scope=_publish_scope,
        description="Post the Quorum check run (commit status) of each round to GitHub",
        writes_to_github=True,
        default_policy="allow",
        policies=("allow", "deny"),
        # It reports the round's state and is posted again on the next update: a lost one fails.
        lookup=lambda _payload, _request_id: None,
    ),
}


def action_class(name: str) -> ActionClass:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"Unknown action class {name!r}.") from None


def github_write_actions() -> list[str]:
    """The audit actions of executions that wrote to GitHub — reviews, issues, replies, check
    runs and commit statuses — read from the registry (`writes_to_github`), so a new class that
    writes there is listed as soon as it says so: the audit trail's "Who published what"."""
    return [f"{spec.name}.executed" for spec in REGISTRY.values() if spec.writes_to_github]
