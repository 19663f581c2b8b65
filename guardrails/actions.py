"""The registry of action classes: what each mutates, its payload, how it runs.

Guardrails knows no action of its own app's callers: each app registers its classes at
start-up (`register`, from its AppConfig.ready), and the checkpoint, the inbox and the audit
trail read them here. An executor receives the approved payload, the requester and the
approval request being executed (None on the `allow` path) and returns a JSON-able result; it
must be idempotent, because a redelivered task may call it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from guardrails.models import ApprovalRequest

#: (payload, requester, the request being executed or None when allowed) → its result.
Executor = Callable[[dict[str, Any], Any, ApprovalRequest | None], dict[str, Any]]
#: (workspace, requests of one class) → request id → the page the request is about.
SubjectPages = Callable[[Any, list[ApprovalRequest]], dict[int, str]]


class ActionRefused(Exception):
    """The executor will not run this payload; the message says why."""


@dataclass(frozen=True)
class ActionClass:
    name: str
    mutating: bool
    payload: type[BaseModel]
    execute: Executor
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
    # The pages the inbox links its requests to, in at most one query for all of them.
    subject_pages: SubjectPages | None = None


REGISTRY: dict[str, ActionClass] = {}


def register(spec: ActionClass) -> None:
    """Make an action class known (from an AppConfig.ready). Registering the same class again
    does nothing; another class under a taken name is a programming error."""
    known = REGISTRY.get(spec.name)
    if known is not None and known != spec:
        raise ValueError(f"Action class {spec.name!r} is registered already.")
    REGISTRY[spec.name] = spec


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
