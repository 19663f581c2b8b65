"""Creating a workspace (with its default reviewers) and changing its rules, budgets and
GitHub handle."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.text import slugify

from guardrails.audit import Actor, Target, audit_record
from workspaces import rules
from workspaces.defaults import DEFAULT_REVIEWERS
from workspaces.models import (
    Membership,
    ReviewerConfig,
    Workspace,
)
from workspaces.rules import RuleError


def workspace_create(*, name: str, owner: Any, slug: str = "", request: Any = None) -> Workspace:
    name = name.strip()
    if not name:
        raise RuleError("A workspace needs a name.")
    slug = slugify(slug or name)[:50]
    if not slug:
        raise RuleError("The workspace name must contain letters or digits.")
    with transaction.atomic():
        if Workspace.objects.filter(slug=slug).exists():
            raise RuleError(f"The address {slug!r} is taken; choose another name.")
        workspace = Workspace.objects.create(
            name=name, slug=slug, gated_axes=list(rules.DEFAULT_GATED_AXES)
        )
        Membership.objects.create(workspace=workspace, user=owner, role=rules.Role.OWNER)
        ReviewerConfig.objects.bulk_create(
            ReviewerConfig(workspace=workspace, builtin=True, **spec) for spec in DEFAULT_REVIEWERS
        )
        audit_record(
            action="workspace.created",
            actor=Actor.of(owner),
            workspace=workspace,
            target=Target.of(workspace),
            payload={"name": name, "slug": slug},
            request=request,
        )
    return workspace


def rules_update(
    *,
    workspace: Workspace,
    actor: Any,
    tier: str,
    gated_axes: list[str],
    hold_unreadable_languages: bool | None = None,
    p0_dismissal_needs_approver: bool | None = None,
    request: Any = None,
) -> Workspace:
    """The workspace's rules; a switch left None keeps its value. Each change is audited."""
    if tier not in rules.Tier.__members__.values():
        allowed = ", ".join(t.value for t in rules.Tier)
        raise RuleError(f"Unknown tier {tier!r}; choose one of: {allowed}.")
    gated = rules.clean_gated_axes(gated_axes)
    with transaction.atomic(durable=True):
        ws = Workspace.objects.select_for_update().get(pk=workspace.pk)
        before = {"tier": ws.tier, "gated_axes": ws.gated_axes}
        hold_before = ws.hold_unreadable_languages
        approver_before = ws.p0_dismissal_needs_approver
        if hold_unreadable_languages is not None:
            ws.hold_unreadable_languages = hold_unreadable_languages
        if p0_dismissal_needs_approver is not None:
            ws.p0_dismissal_needs_approver = p0_dismissal_needs_approver
        ws.tier, ws.gated_axes = tier, gated
        ws.save(
            update_fields=[
                "tier",
                "gated_axes",
                "hold_unreadable_languages",
                "p0_dismissal_needs_approver",
            ]
        )
        if approver_before != ws.p0_dismissal_needs_approver:
            audit_record(
                action="rules.p0_dismissal_approver_changed",
                actor=Actor.of(actor),
                workspace=ws,
                target=Target.of(ws),
                payload={"before": approver_before, "after": ws.p0_dismissal_needs_approver},
                request=request,
            )
        if hold_before != ws.hold_unreadable_languages:
            audit_record(
                action="rules.hold_unreadable_changed",
                actor=Actor.of(actor),
                workspace=ws,
                target=Target.of(ws),
                payload={"before": hold_before, "after": ws.hold_unreadable_languages},
                request=request,
            )
        if before["tier"] != tier:
            audit_record(
                action="rules.tier_changed",
                actor=Actor.of(actor),
                workspace=ws,
                target=Target.of(ws),
                payload={"before": before["tier"], "after": tier},
                request=request,
            )
        if before["gated_axes"] != gated:
            audit_record(
                action="rules.gated_axes_changed",
                actor=Actor.of(actor),
                workspace=ws,
                target=Target.of(ws),
                payload={"before": before["gated_axes"], "after": gated},
                request=request,
            )
    return ws


def budgets_update(
    *,
    workspace: Workspace,
    actor: Any,
    round_token_budget: int | None,
    pr_token_budget: int | None,
    request: Any = None,
) -> Workspace:
    """The token budgets a round plans within: per round, and (optional) per pull request,
    every round of it together (docs/domain-rules.md#token-budgets)."""
    per_round = rules.clean_token_budget(
        round_token_budget, what="budget per round", optional=False
    )
    assert per_round is not None  # not optional: clean_token_budget raised otherwise
    per_pr = rules.clean_token_budget(
        pr_token_budget, what="budget per pull request", optional=True
    )
    with transaction.atomic(durable=True):
        ws = Workspace.objects.select_for_update().get(pk=workspace.pk)
        before = {"round": ws.round_token_budget, "pull_request": ws.pr_token_budget}
        after = {"round": per_round, "pull_request": per_pr}
        if before == after:
            return ws
        ws.round_token_budget, ws.pr_token_budget = per_round, per_pr
        ws.save(update_fields=["round_token_budget", "pr_token_budget"])
        audit_record(
            action="rules.budgets_changed",
            actor=Actor.of(actor),
            workspace=ws,
            target=Target.of(ws),
            payload={"before": before, "after": after},
            request=request,
        )
    return ws


def github_handle_update(
    *, workspace: Workspace, actor: Any, handle: str, request: Any = None
) -> Workspace:
    """The handle that makes a comment on GitHub a question for Quorum (`@quorum`)."""
    clean = rules.clean_github_handle(handle)
    with transaction.atomic(durable=True):
        ws = Workspace.objects.select_for_update().get(pk=workspace.pk)
        if ws.github_handle == clean:
            return ws
        before, ws.github_handle = ws.github_handle, clean
        ws.save(update_fields=["github_handle"])
        audit_record(
            action="rules.github_handle_changed",
            actor=Actor.of(actor),
            workspace=ws,
            target=Target.of(ws),
            payload={"before": before, "after": clean},
            request=request,
        )
    return ws
