"""A person's pages outside any one workspace: the home page, creating a workspace,
accepting an invitation, and their API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from workspaces import services
from workspaces.confirm import confirmation_page, confirmed
from workspaces.forms import (
    TokenForm,
    WorkspaceCreateForm,
)
from workspaces.http import AuthenticatedHttpRequest
from workspaces.models import (
    Membership,
)
from workspaces.permissions import may_create_workspace
from workspaces.rules import RuleError


@login_required
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    first = Membership.objects.filter(user=request.user).select_related("workspace").first()
    if first is not None:
        return redirect("reviews:list", first.workspace.slug)
    return redirect("workspaces:create")


@login_required
@require_http_methods(["GET", "POST"])
def workspace_create(request: HttpRequest) -> HttpResponse:
    if not may_create_workspace(request.user):
        return render(request, "workspaces/closed.html", status=403)
    form = WorkspaceCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            ws = services.workspace_create(
                name=form.cleaned_data["name"], owner=request.user, request=request
            )
        except RuleError as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Workspace {ws.name} created.")
            return redirect("workspaces:general", ws.slug)
    return render(request, "workspaces/create.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    """Show an invitation to the signed-in user and let its verified recipient accept it."""
    error, invitation = "", None
    try:
        invitation = services.invitation_from_token(token)
        services.invitation_check_recipient(invitation, request.user)
    except RuleError as exc:
        error = str(exc)
    if request.method == "POST" and not error:
        try:
            membership = services.invitation_accept(token=token, user=request.user, request=request)
        except RuleError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Welcome to {membership.workspace.name}.")
            return redirect("reviews:list", membership.workspace.slug)
    context = {"invitation": invitation, "error": error}
    return render(request, "workspaces/invitation.html", context, status=400 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = TokenForm()
    new_secret = None
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            token = get_object_or_404(request.user.api_tokens, pk=request.POST.get("token_id"))
            if not confirmed(request):
                return confirmation_page(
                    request,
                    title=f"Revoke the token {token.name}?",
                    consequences=[
                        f"Every script using {token.prefix}… gets 401 from its next call on.",
                        "A revoked token cannot be brought back: create a new one instead.",
                    ],
                    button=f"Revoke {token.name}",
                    cancel_url=reverse("tokens"),
                )
            services.api_token_revoke(token=token, actor=request.user, request=request)
            messages.success(request, f"Token {token.name} revoked.")
            return redirect("tokens")
        form = TokenForm(request.POST)
        if form.is_valid():
            try:
                _, new_secret = services.api_token_create(
                    user=request.user,
                    name=form.cleaned_data["name"],
                    agent_name=form.cleaned_data["agent_name"],
                    request=request,
                )
            except RuleError as exc:
                form.add_error("name", str(exc))
            else:
                form = TokenForm()
    context = {"form": form, "tokens": request.user.api_tokens.all(), "new_secret": new_secret}
    return render(request, "workspaces/tokens.html", context)
