"""Settings pages. Thin: parse the form, check the role, call a service, render."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from config.errors import errors_as_messages
from reviews.pipeline.template import builtin_runs_in
from workspaces import rules, services
from workspaces.confirm import confirmation_page, confirmed
from workspaces.forms import (
    BudgetForm,
    FewShotFormSet,
    FewShotProposalForm,
    GitHubHandleForm,
    InviteForm,
    PriceForm,
    RepositoryForm,
    RepositoryUpdateForm,
    ReviewerConfigForm,
    RoleForm,
    RulesForm,
    TokenForm,
    WorkspaceCreateForm,
    few_shots_from,
)
from workspaces.http import AuthenticatedHttpRequest, HtmxHttpRequest
from workspaces.models import (
    FewShotProposal,
    Invitation,
    Membership,
    Repository,
    ReviewerConfig,
    Workspace,
)
from workspaces.permissions import allows, may_create_workspace, membership_get, require
from workspaces.rules import Perm, RuleError
from workspaces.tombstones import tombstone_or_404


def member_view(view):
    """Login required, then resolve the caller's membership of the workspace in the URL."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args, **kwargs):
        membership = membership_get(user=request.user, slug=slug)
        return view(request, membership, *args, **kwargs)

    return wrapper


def _ctx(membership: Membership, **extra) -> dict:
    return {"workspace": membership.workspace, "membership": membership, **extra}


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


def _rules_initial(ws) -> dict:
    return {
        "tier": ws.tier,
        "gated_axes": ws.gated_axes,
        "hold_unreadable_languages": ws.hold_unreadable_languages,
        "p0_dismissal_needs_approver": ws.p0_dismissal_needs_approver,
    }


@member_view
@require_http_methods(["GET", "POST"])
def general(request: HtmxHttpRequest, membership: Membership) -> HttpResponse:
    ws = membership.workspace
    form = RulesForm(initial=_rules_initial(ws))
    saved = False
    status = 200
    if request.method == "POST":
        require(
            membership, Perm.MANAGE_RULES, attempted="change the workspace rules", request=request
        )
        form = RulesForm(request.POST)
        if form.is_valid():
            try:
                ws = services.rules_update(
                    workspace=ws,
                    actor=request.user,
                    tier=form.cleaned_data["tier"],
                    gated_axes=form.cleaned_data["gated_axes"],
                    hold_unreadable_languages=form.cleaned_data["hold_unreadable_languages"],
                    p0_dismissal_needs_approver=form.cleaned_data["p0_dismissal_needs_approver"],
                    request=request,
                )
            except RuleError as exc:
                form.add_error(None, str(exc))
            else:
                saved = True
                membership.workspace = ws
                if not request.htmx:
                    messages.success(request, "Workspace rules saved.")
                    return redirect("workspaces:general", ws.slug)
        if not form.is_valid():
            status = 400
    context = _general_ctx(membership, form=form, saved=saved)
    template = "workspaces/settings_general.html"
    if request.htmx:
        template += "#rules_card"
    return render(request, template, context, status=status)


def _prices_context(membership: Membership, **extra) -> dict:
    from reviews.models import ModelCall, ModelPrice

    ws = membership.workspace
    prices = list(ModelPrice.objects.filter(workspace=ws))
    priced = {p.model for p in prices}
    called = (
        ModelCall.objects.filter(round__space__workspace=ws)
        .values_list("model", flat=True)
        .distinct()
    )
    return {
        "prices": prices,
        "unpriced_models": sorted(set(called) - priced),
        "can_set_prices": allows(membership, Perm.MANAGE_RULES),
        "price_form": extra.pop("price_form", None) or PriceForm(),
        **extra,
    }


def _general_ctx(membership: Membership, **extra) -> dict:
    ws = membership.workspace
    return _ctx(
        membership,
        **{
            "form": RulesForm(initial=_rules_initial(ws)),
            "budget_form": BudgetForm(
                initial={
                    "round_token_budget": ws.round_token_budget,
                    "pr_token_budget": ws.pr_token_budget,
                }
            ),
            "handle_form": GitHubHandleForm(initial={"github_handle": ws.github_handle}),
            "tier_help": [(t.value, rules.TIER_HELP[t]) for t in rules.Tier],
            "default_tier": Workspace._meta.get_field("tier").default,
            "can_edit": allows(membership, Perm.MANAGE_RULES),
            **_prices_context(membership),
            **extra,
        },
    )


@member_view
@require_POST
def prices(request: HttpRequest, membership: Membership) -> HttpResponse:
    """An admin sets (or removes) what a model costs per million tokens."""
    from reviews.services.spend import model_price_delete, model_price_set

    require(membership, Perm.MANAGE_RULES, attempted="set model prices", request=request)
    ws = membership.workspace
    form = PriceForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            if data["remove"]:
                model_price_delete(
                    workspace=ws, actor=request.user, model=data["model"], request=request
                )
                messages.success(request, f"Price of {data['model']} removed.")
            else:
                model_price_set(
                    workspace=ws,
                    actor=request.user,
                    model=data["model"],
                    input_price=data["input_price"],
                    cached_input_price=data["cached_input_price"],
                    output_price=data["output_price"],
                    request=request,
                )
                messages.success(request, f"Price of {data['model']} saved.")
        except RuleError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect(reverse("workspaces:general", args=[ws.slug]) + "#prices")
    context = _general_ctx(membership, price_form=form)
    return render(request, "workspaces/settings_general.html", context, status=400)


@member_view
@require_http_methods(["GET"])
def spend(request: HttpRequest, membership: Membership) -> HttpResponse:
    """What the workspace's model calls cost, per month, per day, per reviewer and per model."""
    from reviews.domain.report_figures import tokens_line
    from reviews.domain.spend import money
    from reviews.selectors import workspace_spend

    data = workspace_spend(membership.workspace_id)

    def rows(items):
        return [(r.key, r.totals, money(r.totals.cost)) for r in items]

    context = _ctx(
        membership,
        total=data.total,
        total_line=tokens_line(data.total) if data.total.calls else "",
        by_month=rows(reversed(data.by_month)),
        by_day=rows(list(reversed(data.by_day))[:62]),
        by_name=rows(data.by_name),
        by_role=rows(data.by_role),
        by_model=rows(data.by_model),
        unpriced=data.unpriced,
        can_set_prices=allows(membership, Perm.MANAGE_RULES),
    )
    return render(request, "workspaces/spend.html", context)


# A general settings card's template fragment → the names its form and "saved" flag go by.
_GENERAL_CARDS = {
    "budget_card": ("budget_form", "budget_saved"),
    "handle_card": ("handle_form", "handle_saved"),
}


def _general_card(
    request: HtmxHttpRequest,
    membership: Membership,
    form: Any,
    save: Callable[[dict[str, Any]], Any],
    *,
    card: str,
    saved_message: str,
) -> HttpResponse:
    """One card of the general settings saved: `save` takes the cleaned form and returns the
    workspace; with htmx the card alone comes back, without it the page (or the card's errors)."""
    saved = False
    if form.is_valid():
        try:
            membership.workspace = save(form.cleaned_data)
        except RuleError as exc:
            form.add_error(None, str(exc))
        else:
            saved = True
            if not request.htmx:
                messages.success(request, saved_message)
                return redirect("workspaces:general", membership.workspace.slug)
    form_name, saved_name = _GENERAL_CARDS[card]
    context = _general_ctx(membership, **{form_name: form, saved_name: saved})
    template = "workspaces/settings_general.html"
    if request.htmx:
        template += f"#{card}"
    return render(request, template, context, status=200 if saved else 400)


@member_view
@require_POST
def budgets(request: HtmxHttpRequest, membership: Membership) -> HttpResponse:
    """The token budgets card of the general settings (admins and owners only)."""
    require(membership, Perm.MANAGE_RULES, attempted="change the token budgets", request=request)
    return _general_card(
        request,
        membership,
        BudgetForm(request.POST),
        lambda data: services.budgets_update(
            workspace=membership.workspace,
            actor=request.user,
            round_token_budget=data["round_token_budget"],
            pr_token_budget=data["pr_token_budget"],
            request=request,
        ),
        card="budget_card",
        saved_message="Token budgets saved.",
    )


@member_view
@require_POST
def github_handle(request: HtmxHttpRequest, membership: Membership) -> HttpResponse:
    """The GitHub handle card of the general settings (admins and owners only)."""
    require(membership, Perm.MANAGE_RULES, attempted="change the GitHub handle", request=request)
    return _general_card(
        request,
        membership,
        GitHubHandleForm(request.POST),
        lambda data: services.github_handle_update(
            workspace=membership.workspace,
            actor=request.user,
            handle=data["github_handle"],
            request=request,
        ),
        card="handle_card",
        saved_message="GitHub handle saved.",
    )


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
    context = _ctx(
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
            context=_ctx(membership),
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


def reviewer_runs_in(config: ReviewerConfig) -> str:
    """Where the settings page says a reviewer runs: the pipeline reads the same settings."""
    if not config.enabled:
        return "Disabled: runs nowhere; rounds that would have run it say it was disabled."
    if config.builtin:
        return builtin_runs_in(config.key, config.dimension)
    return config.runs_in


@member_view
def reviewers(request: HttpRequest, membership: Membership) -> HttpResponse:
    rows = [(c, reviewer_runs_in(c)) for c in membership.workspace.reviewers.all()]
    context = _ctx(membership, rows=rows, can_edit=allows(membership, Perm.MANAGE_REVIEWERS))
    context.update(_precision_context(request, membership))
    return render(request, "workspaces/settings_reviewers.html", context)


def _precision_context(request: HttpRequest, membership: Membership) -> dict:
    """Each reviewer's precision from people's decisions, per rule under it, over the
    workspace or the repository picked (`?repository=<id>`), as
    docs/domain-rules.md#reviewer-precision says."""
    from reviews.domain.reviewer_precision import MIN_CALIBRATION_DECISIONS, RECENT_DECISIONS
    from reviews.selectors import reviewer_precision

    repositories = list(membership.workspace.repositories.all())
    raw = request.GET.get("repository", "")
    repository = None
    if raw:
        if not raw.isdigit() or len(raw) > 9:
            raise RuleError(f"“{raw[:40]}” is not a repository: pick one from the list.")
        repository = next((r for r in repositories if r.pk == int(raw)), None)
        if repository is None:
            raise Http404("No such repository in this workspace.")
    precision = reviewer_precision(membership.workspace, repository=repository)
    return {
        "precision": precision,
        # Calibration is stale too where a reviewer's precision dropped lately.
        "precision_drops": {r.reviewer: r.drop for r in precision if r.drop},
        "precision_repository": repository,
        "repositories": repositories,
        "recent_decisions": RECENT_DECISIONS,
        "min_calibration_decisions": MIN_CALIBRATION_DECISIONS,
    }


@member_view
@require_http_methods(["GET", "POST"])
def reviewer_edit(
    request: HttpRequest, membership: Membership, key: str | None = None
) -> HttpResponse:
    ws = membership.workspace
    config = get_object_or_404(ReviewerConfig, workspace=ws, key=key) if key else None
    status = 200
    if request.method == "POST":
        attempted = "change reviewer configs" if config else "add reviewers"
        require(membership, Perm.MANAGE_REVIEWERS, attempted=attempted, request=request)
        if config and request.POST.get("action") == "delete":
            with errors_as_messages(request):
                services.reviewer_config_delete(config=config, actor=request.user, request=request)
                messages.success(request, f"Reviewer {config.name} deleted.")
                return redirect("workspaces:reviewers", ws.slug)
            return redirect("workspaces:reviewer", ws.slug, config.key)
        form = ReviewerConfigForm(request.POST, builtin=bool(config and config.builtin))
        shots = FewShotFormSet(request.POST, prefix="shots")
        if form.is_valid() and shots.is_valid():
            data = {**form.cleaned_data, "few_shots": few_shots_from(shots)}
            try:
                if config:
                    config = services.reviewer_config_update(
                        config=config, actor=request.user, data=data, request=request
                    )
                else:
                    config = services.reviewer_config_create(
                        workspace=ws,
                        actor=request.user,
                        key=request.POST.get("key", ""),
                        data=data,
                        request=request,
                    )
            except RuleError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Reviewer {config.name} saved.")
                return redirect("workspaces:reviewer", ws.slug, config.key)
        status = 400
    else:
        initial = (
            ReviewerConfigForm.initial_for(config)
            if config
            else {"enabled": True, "tiers": rules.default_reviewer_tiers()}
        )
        form = ReviewerConfigForm(initial=initial, builtin=bool(config and config.builtin))
        shots = FewShotFormSet(initial=config.few_shots if config else [], prefix="shots")
    return _reviewer_page(
        request, membership, config, form=form, shots=shots, status=status, refresh=status == 200
    )


def _reviewer_page(
    request: HttpRequest,
    membership: Membership,
    config: ReviewerConfig | None,
    *,
    form: ReviewerConfigForm,
    shots: Any,
    status: int = 200,
    refresh: bool = False,
    bound: tuple[FewShotProposal, FewShotProposalForm] | None = None,
) -> HttpResponse:
    """The reviewer's page. An admin also sees the few-shots proposed from people's decisions,
    brought up to date as the page opens (`refresh`; see few_shot_proposals_refresh); `bound`
    is a proposal whose accept or edit did not validate, shown with its errors."""
    can_edit = allows(membership, Perm.MANAGE_REVIEWERS)
    proposals: list[tuple[FewShotProposal, FewShotProposalForm]] = []
    if config and can_edit:
        waiting = (
            services.few_shot_proposals_refresh(config=config)
            if refresh
            else list(config.few_shot_proposals.filter(status=FewShotProposal.Status.PROPOSED))
        )
        proposals = [
            (p, bound[1] if bound and bound[0].pk == p.pk else proposal_form(p)) for p in waiting
        ]
    context = _ctx(
        membership,
        config=config,
        runs_in=reviewer_runs_in(config) if config else "",
        form=form,
        shots=shots,
        can_edit=can_edit,
        proposals=_with_sources(proposals),
        precision_drop=_precision_drop(membership, config),
    )
    return render(request, "workspaces/settings_reviewer.html", context, status=status)


def _precision_drop(membership: Membership, config: ReviewerConfig | None) -> Any:
    """(latest, earlier) precision when this reviewer's dropped lately, else None."""
    from reviews.selectors import precision_drops

    return precision_drops(membership.workspace).get(config.key) if config else None


def proposal_form(proposal: FewShotProposal, data: Any = None) -> FewShotProposalForm:
    return FewShotProposalForm(data, initial=proposal.shot(), prefix=f"proposal-{proposal.pk}")


def _with_sources(
    proposals: list[tuple[FewShotProposal, FewShotProposalForm]],
) -> list[tuple[FewShotProposal, FewShotProposalForm, Any]]:
    """Each proposal with the finding it comes from (one query), for its link and title."""
    from reviews.models import ReviewNode

    ids = [p.source_node_id for p, _ in proposals]
    nodes = ReviewNode.objects.only("pk", "space_id", "title", "priority").in_bulk(ids)
    return [(p, form, nodes.get(p.source_node_id)) for p, form in proposals]


#: What the page says once a proposal is decided.
_PROPOSAL_DONE = {
    "accept": "Few-shot accepted: it is in the reviewer's few-shots, and its next request "
    "carries it.",
    "edit": "Proposal saved; it still waits to be accepted or rejected.",
    "reject": "Proposal rejected: the finding it came from is not proposed again.",
}


@member_view
@require_POST
def reviewer_proposal(
    request: HttpRequest, membership: Membership, key: str, proposal_id: int
) -> HttpResponse:
    """Accept (as proposed or edited), edit or reject a proposed few-shot (admins only)."""
    ws = membership.workspace
    config = get_object_or_404(ReviewerConfig, workspace=ws, key=key)
    require(
        membership, Perm.MANAGE_REVIEWERS, attempted="decide proposed few-shots", request=request
    )
    proposal = get_object_or_404(FewShotProposal, pk=proposal_id, reviewer=config)
    action = request.POST.get("action", "")
    page = reverse("workspaces:reviewer", args=[ws.slug, config.key]) + "#few-shot-proposals"
    form = proposal_form(proposal, request.POST)
    if action != "reject" and not form.is_valid():
        return _reviewer_page(
            request,
            membership,
            config,
            form=ReviewerConfigForm(
                initial=ReviewerConfigForm.initial_for(config), builtin=config.builtin
            ),
            shots=FewShotFormSet(initial=config.few_shots, prefix="shots"),
            status=400,
            bound=(proposal, form),
        )
    with errors_as_messages(request):
        services.few_shot_proposal_decide(
            proposal=proposal,
            config=config,
            action=action,
            actor=request.user,
            shot=None if action == "reject" else form.shot(),
            request=request,
        )
        messages.success(request, _PROPOSAL_DONE[action])
    return redirect(page)


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
    context = _ctx(
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

    from reviews.services.github import github_app_mode, installation_repositories
    from reviews.sources.github_client import GitHubError

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
            context=_ctx(membership),
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
    context = _ctx(membership, repo=repo, counts=services.repository_footprint(repo), error=error)
    return render(request, "workspaces/repository_delete.html", context, status=status)


@member_view
def deleted(
    request: HttpRequest, membership: Membership, kind: str, object_id: str
) -> HttpResponse:
    """What a deleted object was (audit rows link here); 404 when nothing is known of it."""
    return tombstone_or_404(request, membership, kind=kind, object_id=object_id)


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
