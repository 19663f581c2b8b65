"""A workspace's members: inviting people, changing a member's role or removing them, and
revoking an invitation."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from config.errors import errors_as_messages
from workspaces import services
from workspaces.confirm import confirmation_page, confirmed
from workspaces.forms import (
    InviteForm,
    RoleForm,
)
from workspaces.models import (
    Invitation,
    Membership,
)
from workspaces.permissions import allows, require
from workspaces.rules import Perm, RuleError
from workspaces.views import member_context, member_view


@member_view
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest, membership: Membership) -> HttpResponse:
    ws = membership.workspace
    form = InviteForm()
    status = 200
    if request.method == "POST":
        require(membership, Perm.MANAGE_MEMBERS, attempted="invite members", request=request)
        form = InviteForm(request.POST)
        if form.is_valid():
            try:
                services.member_invite(actor=membership, request=request, **form.cleaned_data)
            except RuleError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(
                    request,
                    f"{form.cleaned_data['email']} invited: a single-use link was sent to the "
                    "address. Nothing is granted until its verified owner accepts it.",
                )
                return redirect("workspaces:members", ws.slug)
        status = 400
    context = member_context(
        membership,
        form=form,
        members=ws.memberships.select_related("user").order_by("user__email"),
        invitations=ws.invitations.order_by("email"),
        roles=Membership.Role.choices,
        can_edit=allows(membership, Perm.MANAGE_MEMBERS),
    )
    return render(request, "workspaces/settings_members.html", context, status=status)


@member_view
@require_POST
def member_change(request: HttpRequest, membership: Membership, member_id: int) -> HttpResponse:
    ws = membership.workspace
    require(membership, Perm.MANAGE_MEMBERS, attempted="change members", request=request)
    target = get_object_or_404(
        Membership.objects.select_related("user"), pk=member_id, workspace=ws
    )
    if request.POST.get("action") == "remove" and not confirmed(request):
        return confirmation_page(
            request,
            title=f"Remove {target.user.email} from {ws.name}?",
            consequences=[
                f"{target.user.email} loses access to every review, setting and audit page of "
                f"{ws.name} at once; their open pages close.",
                "Their past decisions and audit events stay. To give access back, invite them "
                "again.",
            ],
            button=f"Remove {target.user.email}",
            cancel_url=reverse("workspaces:members", args=[ws.slug]),
            context=member_context(membership),
        )
    with errors_as_messages(request):
        if request.POST.get("action") == "remove":
            services.member_remove(actor=membership, membership=target, request=request)
            messages.success(request, f"{target.user.email} removed.")
        else:
            form = RoleForm(request.POST)
            if not form.is_valid():
                raise RuleError(f"Unknown role {request.POST.get('role')!r}.")
            services.member_change_role(
                actor=membership, membership=target, role=form.cleaned_data["role"], request=request
            )
            messages.success(request, f"{target.user.email} is now {form.cleaned_data['role']}.")
    return redirect("workspaces:members", ws.slug)


@member_view
@require_POST
def invitation_revoke(
    request: HttpRequest, membership: Membership, invitation_id: int
) -> HttpResponse:
    require(membership, Perm.MANAGE_MEMBERS, attempted="revoke invitations", request=request)
    inv = get_object_or_404(Invitation, pk=invitation_id, workspace=membership.workspace)
    services.invitation_revoke(actor=membership, invitation=inv, request=request)
    messages.success(request, f"Invitation for {inv.email} revoked.")
    return redirect("workspaces:members", membership.workspace.slug)
