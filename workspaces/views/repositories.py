"""A workspace's repositories: connecting them, their settings, disconnecting and deleting
one, and what a deleted object was."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from config.errors import errors_as_messages
from reviews.services.github import github_app_mode, installation_repositories
from reviews.sources.github_client import GitHubError
from workspaces import services
from workspaces.confirm import confirmation_page, confirmed
from workspaces.forms import (
    RepositoryForm,
    RepositoryUpdateForm,
)
from workspaces.models import (
    Membership,
    Repository,
)
from workspaces.permissions import allows, require
from workspaces.rules import Perm, RuleError
from workspaces.tombstones import tombstone_or_404
from workspaces.views import member_context, member_view


@member_view
@require_http_methods(["GET", "POST"])
def repositories(request: HttpRequest, membership: Membership) -> HttpResponse:
    ws = membership.workspace
    form = RepositoryForm(initial={"kind": Repository.Kind.GITHUB, "base_branch": "main"})
    status = 200
    if request.method == "POST":
        require(
            membership, Perm.MANAGE_REPOSITORIES, attempted="connect repositories", request=request
        )
        form = RepositoryForm(request.POST)
        if form.is_valid():
            try:
                repo = services.repository_connect(
                    workspace=ws, actor=request.user, request=request, **form.cleaned_data
                )
            except RuleError as exc:
                form.add_error("name", str(exc))
            else:
                if repo.restored:
                    kept = repo.restored
                    messages.success(
                        request,
                        f"{repo} connected again: {_reviews_phrase(kept)} restored, with their "
                        "findings and decisions.",
                    )
                else:
                    messages.success(request, f"{repo} connected.")
                return redirect("workspaces:repositories", ws.slug)
        status = 400
    archived = [
        (repo, services.repository_footprint(repo))
        for repo in ws.repositories.filter(archived_at__isnull=False)
    ]
    can_edit = allows(membership, Perm.MANAGE_REPOSITORIES)
    installable, installable_problem = _installable(ws) if can_edit else ([], "")
    context = member_context(
        membership,
        form=form,
        installable=installable,
        installable_problem=installable_problem,
        repositories=ws.repositories.filter(archived_at__isnull=True),
        archived=archived,
        can_edit=allows(membership, Perm.MANAGE_REPOSITORIES),
        can_delete=allows(membership, Perm.DELETE_REVIEWS),
    )
    return render(request, "workspaces/settings_repositories.html", context, status=status)


@member_view
@require_POST
def repository_change(request: HttpRequest, membership: Membership, repo_id: int) -> HttpResponse:
    ws = membership.workspace
    require(membership, Perm.MANAGE_REPOSITORIES, attempted="change repositories", request=request)
    repo = get_object_or_404(Repository, pk=repo_id, workspace=ws)
    if request.POST.get("action") == "remove":
        return _disconnect(request, membership, repo)
    form = RepositoryUpdateForm(request.POST)
    with errors_as_messages(request):
        if not form.is_valid():
            raise RuleError("Give a base branch.")
        services.repository_update(
            repository=repo, actor=request.user, request=request, **form.cleaned_data
        )
        messages.success(request, f"{repo} updated.")
    return redirect("workspaces:repositories", ws.slug)


def _installable(ws) -> tuple[list[str], str]:
    """With a GitHub App: the repositories its installations bound to this workspace reach
    now (asked of GitHub, so added and removed repositories show at once), less those
    connected. Returns (names, what went wrong asking)."""
    from django.core.exceptions import ImproperlyConfigured

    if not github_app_mode():
        return [], ""
    connected = {
        name.lower()
        for name in ws.repositories.filter(
            kind=Repository.Kind.GITHUB, archived_at__isnull=True
        ).values_list("full_name", flat=True)
    }
    names: set[str] = set()
    problems = []
    for installation in ws.github_installations.all():
        try:
            names.update(installation_repositories(installation.installation_id))
        except (GitHubError, ImproperlyConfigured) as exc:
            problems.append(f"installation {installation.installation_id}: {exc}")
    return sorted(n for n in names if n.lower() not in connected), "; ".join(problems)


def _reviews_phrase(counts: dict) -> str:
    n = counts.get("review_spaces", 0)
    return f"{n} review{'' if n == 1 else 's'}"


def _disconnect(request: HttpRequest, membership: Membership, repo: Repository) -> HttpResponse:
    ws = membership.workspace
    if repo.archived_at is not None:
        messages.info(request, f"{repo} is already disconnected.")
        return redirect("workspaces:repositories", ws.slug)
    if request.method != "POST" or not confirmed(request):
        counts = services.repository_footprint(repo)
        return confirmation_page(
            request,
            title=f"Disconnect {repo}?",
            consequences=[
                f"Nothing is deleted: its {_reviews_phrase(counts)} ({counts['findings']} "
                f"findings, {counts['triage_decisions']} triage decisions) stay readable, "
                "read-only, and keep their audit trail.",
                "No new review starts for it: not from the reviews page, the API or GitHub "
                "pushes. A round still running is cancelled.",
                "Connecting the same repository again restores every review as it was.",
            ],
            button=f"Disconnect {repo}",
            cancel_url=reverse("workspaces:repositories", args=[ws.slug]),
            context=member_context(membership),
        )
    kept = services.repository_archive(repository=repo, actor=request.user, request=request)
    messages.success(
        request,
        f"{repo} disconnected: {_reviews_phrase(kept)} kept, read-only. Connect it again to "
        "restore them.",
    )
    return redirect("workspaces:repositories", ws.slug)


@member_view
@require_http_methods(["GET", "POST"])
def repository_disconnect(
    request: HttpRequest, membership: Membership, repo_id: int
) -> HttpResponse:
    """GET: what disconnecting does, and the button; POST with confirm=yes: archive."""
    require(
        membership, Perm.MANAGE_REPOSITORIES, attempted="disconnect repositories", request=request
    )
    repo = get_object_or_404(Repository, pk=repo_id, workspace=membership.workspace)
    return _disconnect(request, membership, repo)


@member_view
@require_http_methods(["GET", "POST"])
def repository_delete(request: HttpRequest, membership: Membership, repo_id: int) -> HttpResponse:
    """Delete a disconnected repository's reviews for good: owners only, the name typed."""
    ws = membership.workspace
    require(
        membership,
        Perm.DELETE_REVIEWS,
        attempted="delete a repository's reviews for good",
        request=request,
    )
    repo = get_object_or_404(Repository, pk=repo_id, workspace=ws)
    error, status = "", 200
    if request.method == "POST":
        try:
            deleted = services.repository_purge(
                repository=repo,
                actor=membership,
                typed_name=request.POST.get("confirm_name", ""),
                request=request,
            )
        except RuleError as exc:
            error, status = str(exc), 400
        else:
            messages.success(
                request,
                f"{repo} and its {_reviews_phrase(deleted)} were deleted for good "
                f"({deleted['findings']} findings, {deleted['triage_decisions']} triage "
                "decisions). The audit trail keeps the record.",
            )
            return redirect("workspaces:repositories", ws.slug)
    context = member_context(
        membership, repo=repo, counts=services.repository_footprint(repo), error=error
    )
    return render(request, "workspaces/repository_delete.html", context, status=status)


@member_view
def deleted(
    request: HttpRequest, membership: Membership, kind: str, object_id: str
) -> HttpResponse:
    """What a deleted object was (audit rows link here); 404 when nothing is known of it."""
    return tombstone_or_404(request, membership, kind=kind, object_id=object_id)
