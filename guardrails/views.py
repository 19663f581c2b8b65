"""Approvals inbox, audit trail and guardrail settings. Thin: services decide, pages show."""

from __future__ import annotations

from datetime import date

from django.contrib import messages
from django.core.handlers.asgi import ASGIRequest
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_date
from django.views.decorators.http import require_http_methods, require_POST

from config.errors import errors_as_messages
from config.vocabulary import template_enums
from guardrails import exports, rules
from guardrails.actions import REGISTRY, github_write_actions
from guardrails.audit import chain_name
from guardrails.models import ApprovalRequest, ApprovalWebhook, AuditEvent, WebhookDelivery
from guardrails.notify import approval_webhook_remove, approval_webhook_set, webhook_display
from guardrails.presence import present_approvers
from guardrails.rules import decision_flash
from guardrails.selectors import audit_events
from guardrails.services.approvals import (
    approval_decide,
    approval_withdraw,
    approvals_expire_due,
)
from guardrails.services.checkpoint import policy_for
from guardrails.services.policies import policy_update
from guardrails.verification import chain_verify
from workspaces.confirm import confirmation_page, confirmed
from workspaces.models import Membership, Tombstone
from workspaces.permissions import allows, require
from workspaces.rules import Perm, RuleError
from workspaces.views import member_view


def inbox_context(membership: Membership) -> dict:
    ws = membership.workspace
    pending = list(
        ApprovalRequest.objects.filter(
            workspace=ws, status=rules.Status.PENDING, expires_at__gt=timezone.now()
        )
        .select_related("requester")
        .prefetch_related("decisions__approver", "notices")
        .order_by("created_at")
    )
    recent = list(
        ApprovalRequest.objects.filter(workspace=ws)
        .exclude(pk__in=[r.pk for r in pending])
        .select_related("requester")
        .prefetch_related("decisions__approver")[:20]
    )
    return {
        "workspace": ws,
        "membership": membership,
        "pending": pending,
        "recent": recent,
        "previews": {r.pk: _preview(r) for r in pending},
        "subjects": request_subjects(ws, [*pending, *recent]),
        "notes": requester_notes(ws, pending),
        "can_decide": allows(membership, Perm.DECIDE_APPROVAL),
        # The viewer is never counted: what matters is whether someone else could decide.
        "approvers_present": len(
            present_approvers(workspace_id=ws.pk, exclude_user_id=membership.user_id)
        ),
        **template_enums(ActionName=rules.ActionName),
    }


def _preview(request: ApprovalRequest) -> dict | None:
    """What was asked, exactly as it would run: the stored plan, not a fresh computation."""
    if request.action_class == rules.ActionName.PR_PUBLISH:
        return request.payload.get("plan")
    return None


def request_subjects(workspace, requests: list[ApprovalRequest]) -> dict[int, str]:
    """Request id → the page it is about (the review, the ticket or the answer on its review,
    or the guardrail settings), as its action class links it (`subject_pages`, registered with
    the class): a query per class at most, whatever the number of requests."""
    by_class: dict[str, list[ApprovalRequest]] = {}
    for r in requests:
        by_class.setdefault(r.action_class, []).append(r)
    links: dict[int, str] = {}
    for name, rows in by_class.items():
        spec = REGISTRY.get(name)
        if spec is not None and spec.subject_pages is not None:
            links.update(spec.subject_pages(workspace, rows))
    return links


def requester_notes(workspace, requests: list[ApprovalRequest]) -> dict[int, str]:
    """Request id → what the requester wrote for the approver, kept with the request's audit
    event (`guardrails.services.checkpoint`). One query."""
    if not requests:
        return {}
    events = AuditEvent.objects.filter(
        workspace=workspace,
        action="approval.requested",
        payload__request__in=[r.pk for r in requests],
    ).values_list("payload", flat=True)
    return {
        int(p["request"]): str(p["note"])
        for p in events
        if isinstance(p, dict) and p.get("note") and isinstance(p.get("request"), int)
    }


@member_view
def approvals(request: HttpRequest, membership: Membership) -> HttpResponse:
    # There is no scheduler: requests past their time are marked expired (and audited) when
    # someone looks, and refused at decision and execution time regardless.
    approvals_expire_due()
    return render(request, "guardrails/approvals.html", inbox_context(membership))


@member_view
@require_POST
def approval_decision(
    request: HttpRequest, membership: Membership, request_id: int
) -> HttpResponse:
    require(
        membership, Perm.DECIDE_APPROVAL, attempted="decide on approval requests", request=request
    )
    approval = get_object_or_404(ApprovalRequest, pk=request_id, workspace=membership.workspace)
    if request.POST.get("decision") == rules.Decision.DENY and not confirmed(request):
        return confirmation_page(
            request,
            title=f"Deny request #{approval.pk} ({approval.target_label})?",
            consequences=[
                "A denied request is final: nothing it asks for happens, and the requester "
                "must ask again.",
                "The denial and its reason are recorded in the audit trail.",
            ],
            button=f"Deny request #{approval.pk}",
            cancel_url=reverse("guardrails:approvals", args=[membership.workspace.slug]),
            context={"workspace": membership.workspace, "membership": membership},
        )
    with errors_as_messages(request):
        decided = approval_decide(
            request=approval,
            approver=request.user,
            decision=request.POST.get("decision", ""),
            reason=request.POST.get("reason", "")[:2000],
            http_request=request,
        )
        decision = rules.Decision(request.POST.get("decision", ""))  # the service checked it
        messages.success(
            request,
            decision_flash(
                number=decided.pk,
                done=decision.done,
                approving=decision is rules.Decision.APPROVE,
                approved=decided.status != rules.Status.PENDING,
                approvals=decided.decisions.filter(decision=rules.Decision.APPROVE).count(),
                required=decided.approvals_required,
            ),
        )
    return redirect("guardrails:approvals", membership.workspace.slug)


@member_view
@require_POST
def approval_withdraw_view(
    request: HttpRequest, membership: Membership, request_id: int
) -> HttpResponse:
    """The requester takes their own request back; the service checks it is theirs."""
    approval = get_object_or_404(ApprovalRequest, pk=request_id, workspace=membership.workspace)
    with errors_as_messages(request):
        approval_withdraw(request=approval, actor=request.user, http_request=request)
        messages.success(request, f"Request #{approval.pk} withdrawn.")
    return redirect("guardrails:approvals", membership.workspace.slug)


# -- audit -----------------------------------------------------------------------------------


def _day(raw: str) -> date | None:
    try:
        return parse_date(raw)
    except ValueError:  # well formed but no such day (2024-02-30): no bound, as for garbage
        return None


def _audit_filtered(request: HttpRequest, membership: Membership):
    """The query string's filters, read the way the API reads its parameters (a malformed day
    is no bound here, where the API answers 422)."""
    q = request.GET
    return audit_events(
        workspace=membership.workspace,
        action=q.get("action", ""),
        actor=q.get("actor", ""),
        target=q.get("target", ""),
        since=_day(q.get("since", "")),
        until=_day(q.get("until", "")),
    )


@member_view
def audit(request: HttpRequest, membership: Membership) -> HttpResponse:
    require(membership, Perm.VIEW_AUDIT, attempted="read the audit trail", request=request)
    # Targets deleted for good: the row says so and links to what they were, never to a 404.
    gone = Tombstone.objects.filter(
        workspace=membership.workspace,
        kind=OuterRef("target_type"),
        object_id=OuterRef("target_id"),
    )
    events = _audit_filtered(request, membership).annotate(target_gone=Exists(gone))
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    # Only the entries since the last verified checkpoint: the cost does not grow with the
    # trail. The full walk from entry 1 is `manage.py audit_verify`.
    status = chain_verify(chain=chain_name(membership.workspace), incremental=True)
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "workspace": membership.workspace,
        "membership": membership,
        "page": page,
        "filters": request.GET,
        "query": query.urlencode(),
        "chain_status": status,
        "chain_broken": status.broken,
        # "Who published what": every execution that wrote to GitHub.
        "published_filter": ",".join(github_write_actions()),
    }
    return render(request, "guardrails/audit.html", context)


@member_view
def audit_export(request: HttpRequest, membership: Membership, fmt: str) -> StreamingHttpResponse:
    """CSV or JSON Lines, streamed page by page: constant memory whatever the trail's size."""
    require(membership, Perm.VIEW_AUDIT, attempted="export the audit trail", request=request)
    if fmt not in exports.FORMATS:
        raise Http404("Export as .csv or .jsonl.")
    # The chain filter lets the keyset pages walk the (chain, seq) unique index.
    events = _audit_filtered(request, membership).filter(chain=chain_name(membership.workspace))
    first = exports.first_page(events)
    body = (
        exports.achunks(events, fmt, first)
        if isinstance(request, ASGIRequest)
        else exports.chunks(events, fmt, first)
    )
    content_type = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(body, content_type=content_type)
    name = f"quorum-audit-{membership.workspace.slug}.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


# -- settings ----------------------------------------------------------------------------------


def _whole(request: HttpRequest, name: str, default: int) -> int:
    raw = request.POST.get(name) or str(default)
    try:
        return int(raw)
    except ValueError:
        raise RuleError(f"{name.replace('_', ' ').capitalize()} must be a whole number.") from None


@member_view
@require_http_methods(["GET", "POST"])
def guardrail_settings(request: HttpRequest, membership: Membership) -> HttpResponse:
    ws = membership.workspace
    if request.method == "POST":
        require(
            membership, Perm.MANAGE_RULES, attempted="change guardrail policies", request=request
        )
        with errors_as_messages(request):
            outcome = policy_update(
                workspace=ws,
                action=request.POST.get("action_class", ""),
                policy=request.POST.get("policy", ""),
                approvals_required=_whole(request, "approvals_required", 1),
                expires_after_minutes=_whole(request, "expires_after_minutes", 60),
                actor=request.user,
                http_request=request,
            )
            if outcome.applied:
                messages.success(request, "Policy saved.")
            elif outcome.request is not None:
                messages.success(
                    request,
                    f"Loosening a guardrail needs a second admin or owner: request "
                    f"#{outcome.request.pk} is waiting in the approvals inbox.",
                )
            else:
                messages.info(request, outcome.reason or "Nothing changed.")
        return redirect("guardrails:settings", ws.slug)
    policies = [
        (
            spec,
            policy_for(ws, name),
            [(p.value, p.value.replace("_", " ")) for p in rules.Policy if p in spec.policies],
        )
        for name, spec in REGISTRY.items()
        if spec.fixed_policy is None
    ]
    can_edit = allows(membership, Perm.MANAGE_RULES)
    hook = ApprovalWebhook.objects.filter(workspace=ws).first() if can_edit else None
    context = {
        "workspace": ws,
        "membership": membership,
        "policies": policies,
        "choices": [(p.value, p.value.replace("_", " ")) for p in rules.Policy],
        "can_edit": can_edit,
        # The webhook and its delivery log are for those who may change them.
        "webhook": hook,
        "webhook_shown": webhook_display(hook.url) if hook else "",
        "deliveries": (
            list(WebhookDelivery.objects.filter(webhook=hook).select_related("request")[:50])
            if hook
            else []
        ),
    }
    return render(request, "guardrails/settings.html", context)


@member_view
@require_POST
def webhook_settings(request: HttpRequest, membership: Membership) -> HttpResponse:
    """Set or remove the workspace's approval webhook (admins and owners)."""
    ws = membership.workspace
    require(membership, Perm.MANAGE_RULES, attempted="change the approval webhook", request=request)
    with errors_as_messages(request):
        if request.POST.get("remove"):
            if approval_webhook_remove(workspace=ws, actor=request.user, http_request=request):
                messages.success(request, "Webhook removed: approvers are told by email only.")
        else:
            approval_webhook_set(
                workspace=ws,
                url=request.POST.get("url", ""),
                secret=request.POST.get("secret", ""),
                actor=request.user,
                http_request=request,
            )
            messages.success(request, "Webhook saved. The secret is not shown again.")
    return redirect(reverse("guardrails:settings", args=[ws.slug]) + "#webhook-title")
