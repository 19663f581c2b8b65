"""A workspace's reviewers: the list with each one's precision, a reviewer's settings, and
the few-shot examples proposed from people's decisions."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from config.errors import errors_as_messages
from reviews.domain.reviewer_precision import MIN_CALIBRATION_DECISIONS, RECENT_DECISIONS
from reviews.models import ReviewNode
from reviews.pipeline.template import builtin_runs_in
from reviews.selectors import precision_drops, reviewer_precision
from workspaces import rules, services
from workspaces.forms import (
    FewShotFormSet,
    FewShotProposalForm,
    ReviewerConfigForm,
    few_shots_from,
)
from workspaces.models import (
    FewShotProposal,
    Membership,
    ReviewerConfig,
)
from workspaces.permissions import allows, require
from workspaces.rules import Perm, RuleError
from workspaces.views import member_context, member_view


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
    context = member_context(
        membership, rows=rows, can_edit=allows(membership, Perm.MANAGE_REVIEWERS)
    )
    context.update(_precision_context(request, membership))
    return render(request, "workspaces/settings_reviewers.html", context)


def _precision_context(request: HttpRequest, membership: Membership) -> dict:
    """Each reviewer's precision from people's decisions, per rule under it, over the
    workspace or the repository picked (`?repository=<id>`), as
    docs/domain-rules.md#reviewer-precision says."""

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
    context = member_context(
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

    return precision_drops(membership.workspace).get(config.key) if config else None


def proposal_form(proposal: FewShotProposal, data: Any = None) -> FewShotProposalForm:
    return FewShotProposalForm(data, initial=proposal.shot(), prefix=f"proposal-{proposal.pk}")


def _with_sources(
    proposals: list[tuple[FewShotProposal, FewShotProposalForm]],
) -> list[tuple[FewShotProposal, FewShotProposalForm, Any]]:
    """Each proposal with the finding it comes from (one query), for its link and title."""

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
