"""Guardrail policies: what each action class needs in a workspace, and changing it.

Tightening a policy applies at once; loosening one is itself an action class, `policyChange`,
which goes through the checkpoint like any other: its payload, executor and lookup are here,
registered by guardrails/apps.py (the other classes are registered by the apps they act for).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.urls import reverse
from pydantic import BaseModel, ConfigDict, Field

from guardrails import rules
from guardrails.actions import ActionClass, action_class
from guardrails.audit import Actor, Target, audit_record
from guardrails.models import ActionPolicy, ApprovalRequest
from guardrails.services.checkpoint import checkpoint, policy_for
from workspaces.models import Workspace
from workspaces.rules import RuleError


def policy_setting(policy: ActionPolicy) -> dict[str, Any]:
    return {
        "policy": policy.policy,
        "approvals_required": policy.approvals_required,
        "expires_after_minutes": policy.expires_after_minutes,
    }


def _as_rule(setting: dict[str, Any]) -> rules.PolicySetting:
    return rules.PolicySetting(
        rules.Policy(setting["policy"]),
        setting["approvals_required"],
        setting["expires_after_minutes"],
    )


def policy_digest(setting: dict[str, Any]) -> str:
    """A 40-hex fingerprint of a policy setting: the 'head' a policyChange request binds."""
    canonical = json.dumps(setting, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(canonical.encode(), usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class PolicyUpdate:
    policy: ActionPolicy
    applied: bool
    request: ApprovalRequest | None = None
    reason: str = ""


def policy_update(
    *,
    workspace: Workspace,
    action: str,
    policy: str,
    approvals_required: int,
    expires_after_minutes: int,
    actor: Any,
    http_request: Any = None,
) -> PolicyUpdate:
    """Tightening applies at once; loosening becomes a policyChange request that another admin or
    owner must approve, so no single person can switch a guardrail off."""
    try:
        spec = action_class(action)
    except ValueError:
        # A form's hidden field edited, or a stale page: said, not a server error.
        raise RuleError(
            "Unknown action class: reload the page and choose one of its policies."
        ) from None
    if spec.fixed_policy is not None:
        raise RuleError(f"The policy of {action} is fixed and cannot be changed.")
    if policy not in rules.Policy.__members__.values():
        raise RuleError(f"Unknown policy {policy!r}; use allow, require_approval or deny.")
    if policy not in spec.policies:
        raise RuleError(f"The policy of {action} is one of {', '.join(spec.policies)}.")
    if not 1 <= approvals_required <= 5:
        raise RuleError("Approvals required must be between 1 and 5.")
    if not 5 <= expires_after_minutes <= 7 * 24 * 60:
        raise RuleError("Requests must expire after 5 minutes to 7 days.")
    current = policy_for(workspace, action)
    before = policy_setting(current)
    after = {
        "policy": policy,
        "approvals_required": approvals_required,
        "expires_after_minutes": expires_after_minutes,
    }
    if before == after:
        return PolicyUpdate(current, applied=False, reason="Nothing changed.")
    if not rules.loosens(_as_rule(before), _as_rule(after)):
        row = policy_apply(
            workspace=workspace,
            action=action,
            before=before,
            after=after,
            actor=actor,
            http_request=http_request,
        )
        return PolicyUpdate(row, applied=True)
    result = checkpoint(
        action="policyChange",
        actor=actor,
        workspace=workspace,
        target=Target("actionpolicy", action, action),
        payload={
            "workspace": workspace.pk,
            "action_class": action,
            "head_sha": policy_digest(before),
            "before": before,
            "after": after,
        },
        http_request=http_request,
    )
    return PolicyUpdate(current, applied=False, request=result.request, reason=result.reason)


def policy_apply(
    *,
    workspace: Workspace,
    action: str,
    before: dict[str, Any],
    after: dict[str, Any],
    actor: Any,
    http_request: Any = None,
) -> ActionPolicy:
    """Write a policy setting (the tightening path, or an approved policyChange)."""
    with transaction.atomic():
        row, _ = ActionPolicy.objects.update_or_create(
            workspace=workspace, action_class=action, defaults=after
        )
        audit_record(
            action="guardrails.policy_changed",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target("actionpolicy", action, action),
            payload={"before": before, "after": after},
            request=http_request,
        )
    return row


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
    workspace = Workspace.objects.get(pk=payload["workspace"])
    return policy_digest(policy_setting(policy_for(workspace, payload["action_class"])))


def _policy_change(
    payload: dict[str, Any], requester: Any, approval: ApprovalRequest | None
) -> dict[str, Any]:
    policy_apply(
        workspace=Workspace.objects.get(pk=payload["workspace"]),
        action=payload["action_class"],
        before=payload["before"],
        after=payload["after"],
        actor=requester,
    )
    return {"action_class": payload["action_class"], "policy": payload["after"]}


def _policy_lookup(payload: dict[str, Any], request_id: int) -> dict[str, Any] | None:
    """The policy as it stands: applied if it is the requested setting."""
    after = PolicySettingModel.model_validate(payload["after"]).model_dump()
    if _policy_now(payload) != policy_digest(after):
        return None
    return {"action_class": payload["action_class"], "policy": payload["after"]}


def _policy_scope(payload: dict[str, Any]) -> tuple[int | None, str, str]:
    return payload["workspace"], "actionpolicy", payload["action_class"]


def _settings_pages(workspace: Any, requests: list[ApprovalRequest]) -> dict[int, str]:
    page = reverse("guardrails:settings", args=[workspace.slug])
    return {r.pk: page for r in requests}


POLICY_CHANGE = ActionClass(
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
    lookup=_policy_lookup,
    subject_pages=_settings_pages,
)
