from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from guardrails.models import AuditEvent
from workspaces.models import Membership
from workspaces.permissions import require
from workspaces.rules import Perm
from workspaces.views import member_view


@member_view
def approvals(request: HttpRequest, membership: Membership) -> HttpResponse:
    context = {"workspace": membership.workspace, "membership": membership}
    return render(request, "guardrails/approvals.html", context)


@member_view
def audit(request: HttpRequest, membership: Membership) -> HttpResponse:
    require(membership, Perm.VIEW_AUDIT, attempted="read the audit trail", request=request)
    events = AuditEvent.objects.filter(workspace=membership.workspace).order_by("-seq")
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    context = {"workspace": membership.workspace, "membership": membership, "page": page}
    return render(request, "guardrails/audit.html", context)
