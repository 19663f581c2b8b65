"""Workspace API: rules, reviewer configs, members, repositories. Same checks as the pages.
The schemas it takes and answers are in workspaces/api/schemas.py."""

from __future__ import annotations

from collections.abc import Collection

from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from config.api_types import Id, Limit, ReviewerKey, Slug, responses
from reviews.domain.reviewer_precision import Precision
from reviews.selectors import precision_drops, reviewer_precision
from workspaces import services
from workspaces.api.schemas import (
    BudgetsIn,
    BudgetsOut,
    FewShotProposalIn,
    FewShotProposalOut,
    GitHubIn,
    GitHubOut,
    InvitationOut,
    InviteIn,
    MemberOut,
    PrecisionOut,
    RepositoryIn,
    RepositoryOut,
    RepositoryPatch,
    RepositoryPurgeIn,
    RepositoryPurgeOut,
    ReviewerCreate,
    ReviewerOut,
    ReviewerPatch,
    RoleIn,
    RulesIn,
    RulesOut,
    WorkspaceOut,
)
from workspaces.models import FewShotProposal, Invitation, Membership, Repository, ReviewerConfig
from workspaces.permissions import membership_get, require
from workspaces.rules import (
    Perm,
    RuleError,
)

router = Router(tags=["workspaces"])


def _precision_out(figures: Precision) -> dict:
    return {
        "kept": figures.kept,
        "dismissed": figures.dismissed,
        "decisions": figures.decisions,
        "precision": figures.value,
        "low": figures.low,
        "high": figures.high,
    }


def _member(request, slug: str) -> Membership:
    return membership_get(user=request.user, slug=slug)


def _reviewer_out(cfg: ReviewerConfig, drops: Collection[str] | None = None) -> dict:
    """`drops`: the workspace's reviewers whose precision dropped lately (read when None)."""

    computed = ("calibration_stale", "api_key_set")
    out = {f: getattr(cfg, f) for f in ReviewerOut.model_fields if f not in computed}
    dropped = precision_drops(cfg.workspace) if drops is None else drops
    return {
        **out,
        "calibration_stale": cfg.calibration_stale or cfg.key in dropped,
        "api_key_set": bool(cfg.api_key_sealed),
    }


def _proposal_out(proposal: FewShotProposal) -> dict:
    return {
        "id": proposal.pk,
        "reviewer": proposal.reviewer.key,
        "kind": proposal.kind,
        "outcome": proposal.outcome,
        "finding": proposal.source_node_id,
        "review": proposal.source_node.space_id,
        "path": proposal.path,
        "rule": proposal.rule,
        "few_shot": proposal.shot(),
        "status": proposal.status,
        "created_at": proposal.created_at,
    }


def _repo_out(repo: Repository) -> dict:
    return {
        "id": repo.pk,
        "kind": repo.kind,
        "name": str(repo),
        "path": repo.local_path or None,
        "base_branch": repo.base_branch,
        "auto_review": repo.auto_review,
        "review_drafts": repo.review_drafts,
        "hold_fails_check": repo.hold_fails_check,
        "archived_at": repo.archived_at,
    }


def _dump(schema: Schema) -> dict:
    return schema.model_dump(exclude_unset=True, mode="json")


@router.get("", response=responses({200: list[WorkspaceOut]}))
def workspace_list(request):
    rows = Membership.objects.filter(user=request.user).select_related("workspace")
    return [{"slug": m.workspace.slug, "name": m.workspace.name, "role": m.role} for m in rows]


@router.get("/{slug}/rules", response=responses({200: RulesOut}, 404, 422))
def rules_get(request, slug: Slug):
    return _member(request, slug).workspace


@router.put("/{slug}/rules", response=responses({200: RulesOut}, 400, 403, 404, 413, 422))
def rules_put(request, slug: Slug, body: RulesIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_RULES, attempted="change the workspace rules", request=request)
    return services.rules_update(
        workspace=m.workspace,
        actor=request.user,
        tier=body.tier,
        gated_axes=list(body.gated_axes),
        hold_unreadable_languages=body.hold_unreadable_languages,
        p0_dismissal_needs_approver=body.p0_dismissal_needs_approver,
        request=request,
    )


@router.get("/{slug}/budgets", response=responses({200: BudgetsOut}, 404, 422))
def budgets_get(request, slug: Slug):
    return _member(request, slug).workspace


@router.put("/{slug}/budgets", response=responses({200: BudgetsOut}, 400, 403, 404, 413, 422))
def budgets_put(request, slug: Slug, body: BudgetsIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_RULES, attempted="change the token budgets", request=request)
    return services.budgets_update(
        workspace=m.workspace,
        actor=request.user,
        round_token_budget=body.round_token_budget,
        pr_token_budget=body.pr_token_budget,
        request=request,
    )


@router.get("/{slug}/github", response=responses({200: GitHubOut}, 404, 422))
def github_get(request, slug: Slug):
    return GitHubOut(handle=_member(request, slug).workspace.github_handle)


@router.put("/{slug}/github", response=responses({200: GitHubOut}, 400, 403, 404, 413, 422))
def github_put(request, slug: Slug, body: GitHubIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_RULES, attempted="change the GitHub handle", request=request)
    ws = services.github_handle_update(
        workspace=m.workspace, actor=request.user, handle=body.handle, request=request
    )
    return GitHubOut(handle=ws.github_handle)


@router.get("/{slug}/reviewers", response=responses({200: list[ReviewerOut]}, 404, 422))
def reviewer_list(request, slug: Slug):

    workspace = _member(request, slug).workspace
    drops = precision_drops(workspace)  # read once for the list
    return [_reviewer_out(c, drops) for c in workspace.reviewers.all()]


@router.get("/{slug}/reviewers/{key}", response=responses({200: ReviewerOut}, 404, 422))
def reviewer_get(request, slug: Slug, key: ReviewerKey):
    m = _member(request, slug)
    return _reviewer_out(get_object_or_404(ReviewerConfig, workspace=m.workspace, key=key))


@router.get("/{slug}/reviewer-precision", response=responses({200: PrecisionOut}, 404, 422))
def reviewer_precision_get(
    request, slug: Slug, repository: Id | None = None, last: Limit | None = None
):
    """Each reviewer's precision from people's decisions on its findings, per rule under it
    (docs/domain-rules.md#reviewer-precision): the settings page's figures."""

    m = _member(request, slug)
    require(m, Perm.VIEW, attempted="read reviewer precision", request=request)
    repo = (
        get_object_or_404(Repository, workspace=m.workspace, pk=repository)
        if repository is not None
        else None
    )
    figures = reviewer_precision(m.workspace, repository=repo, last=last)
    return {
        "repository": repo.pk if repo is not None else None,
        "last": last,
        "reviewers": [
            {
                "reviewer": r.reviewer,
                **_precision_out(r.precision),
                "outcomes": {o.value: n for o, n in r.outcomes.items()},
                "rules": [{"rule": x.rule, **_precision_out(x.precision)} for x in r.rules],
                "calibrated": r.calibration.active,
            }
            for r in figures
        ],
    }


@router.post("/{slug}/reviewers", response=responses({201: ReviewerOut}, 400, 403, 404, 413, 422))
def reviewer_create(request, slug: Slug, body: ReviewerCreate):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REVIEWERS, attempted="add reviewers", request=request)
    data = {k: v for k, v in _dump(body).items() if v is not None}  # null: the default
    key = data.pop("key")
    cfg = services.reviewer_config_create(
        workspace=m.workspace, actor=request.user, key=key, data=data, request=request
    )
    return Status(201, _reviewer_out(cfg))


@router.patch(
    "/{slug}/reviewers/{key}", response=responses({200: ReviewerOut}, 400, 403, 404, 413, 422)
)
def reviewer_patch(request, slug: Slug, key: ReviewerKey, body: ReviewerPatch):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REVIEWERS, attempted="change reviewer configs", request=request)
    cfg = get_object_or_404(ReviewerConfig, workspace=m.workspace, key=key)
    data = {k: v for k, v in _dump(body).items() if v is not None}
    return _reviewer_out(
        services.reviewer_config_update(config=cfg, actor=request.user, data=data, request=request)
    )


@router.delete("/{slug}/reviewers/{key}", response=responses({204: None}, 400, 403, 404, 422))
def reviewer_delete(request, slug: Slug, key: ReviewerKey):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REVIEWERS, attempted="delete reviewers", request=request)
    cfg = get_object_or_404(ReviewerConfig, workspace=m.workspace, key=key)
    services.reviewer_config_delete(config=cfg, actor=request.user, request=request)
    return Status(204, None)


@router.get(
    "/{slug}/reviewers/{key}/few-shot-proposals",
    response=responses({200: list[FewShotProposalOut]}, 403, 404, 422),
)
def few_shot_proposal_list(request, slug: Slug, key: ReviewerKey):
    """The few-shots waiting for an admin, brought up to date with people's decisions."""
    m = _member(request, slug)
    require(m, Perm.MANAGE_REVIEWERS, attempted="read proposed few-shots", request=request)
    cfg = get_object_or_404(ReviewerConfig, workspace=m.workspace, key=key)
    waiting = services.few_shot_proposals_refresh(config=cfg)
    rows = FewShotProposal.objects.filter(pk__in=[p.pk for p in waiting]).select_related(
        "reviewer", "source_node"
    )
    return [_proposal_out(p) for p in rows]


@router.post(
    "/{slug}/reviewers/{key}/few-shot-proposals/{proposal_id}",
    response=responses({200: FewShotProposalOut}, 400, 403, 404, 409, 413, 422),
)
def few_shot_proposal_decide(
    request, slug: Slug, key: ReviewerKey, proposal_id: Id, body: FewShotProposalIn
):
    """Accept (as proposed, or with `few_shot` edited), edit or reject a proposal."""
    m = _member(request, slug)
    require(m, Perm.MANAGE_REVIEWERS, attempted="decide proposed few-shots", request=request)
    cfg = get_object_or_404(ReviewerConfig, workspace=m.workspace, key=key)
    proposal = get_object_or_404(FewShotProposal, pk=proposal_id, reviewer=cfg)
    shot = body.few_shot.model_dump() if body.few_shot is not None else None
    if body.action == "reject" and shot is not None:
        raise RuleError("A rejection takes no few_shot: leave it out.")
    services.few_shot_proposal_decide(
        proposal=proposal,
        config=cfg,
        action=body.action,
        actor=request.user,
        shot=shot,
        request=request,
    )
    return _proposal_out(
        FewShotProposal.objects.select_related("reviewer", "source_node").get(pk=proposal.pk)
    )


@router.get("/{slug}/members", response=responses({200: list[MemberOut | InvitationOut]}, 404, 422))
def member_list(request, slug: Slug):
    ws = _member(request, slug).workspace
    members = [
        {"id": m.pk, "email": m.user.email, "role": m.role}
        for m in ws.memberships.select_related("user").order_by("user__email")
    ]
    invitations = [
        {"id": i.pk, "email": i.email, "role": i.role, "pending": True}
        for i in ws.invitations.order_by("email")
    ]
    return members + invitations


@router.post(
    "/{slug}/members", response=responses({201: MemberOut | InvitationOut}, 400, 403, 404, 413, 422)
)
def member_invite(request, slug: Slug, body: InviteIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_MEMBERS, attempted="invite members", request=request)
    result = services.member_invite(actor=m, email=body.email, role=body.role, request=request)
    if isinstance(result, Invitation):
        out = {"id": result.pk, "email": result.email, "role": result.role, "pending": True}
        return Status(201, out)
    return Status(201, {"id": result.pk, "email": result.user.email, "role": result.role})


@router.patch(
    "/{slug}/members/{member_id}", response=responses({200: MemberOut}, 400, 403, 404, 413, 422)
)
def member_role(request, slug: Slug, member_id: Id, body: RoleIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_MEMBERS, attempted="change members", request=request)
    target = get_object_or_404(
        Membership.objects.select_related("user"), pk=member_id, workspace=m.workspace
    )
    target = services.member_change_role(
        actor=m, membership=target, role=body.role, request=request
    )
    return {"id": target.pk, "email": target.user.email, "role": target.role}


@router.delete("/{slug}/members/{member_id}", response=responses({204: None}, 400, 403, 404, 422))
def member_remove(request, slug: Slug, member_id: Id):
    m = _member(request, slug)
    require(m, Perm.MANAGE_MEMBERS, attempted="remove members", request=request)
    target = get_object_or_404(
        Membership.objects.select_related("user"), pk=member_id, workspace=m.workspace
    )
    services.member_remove(actor=m, membership=target, request=request)
    return Status(204, None)


@router.get("/{slug}/repositories", response=responses({200: list[RepositoryOut]}, 404, 422))
def repository_list(request, slug: Slug, archived: bool = False):
    """Connected repositories (those a review can start on); `archived=true` lists the
    disconnected ones, whose reviews are kept read-only."""
    repos = _member(request, slug).workspace.repositories.filter(archived_at__isnull=not archived)
    return [_repo_out(r) for r in repos]


@router.post(
    "/{slug}/repositories", response=responses({201: RepositoryOut}, 400, 403, 404, 413, 422)
)
def repository_connect(request, slug: Slug, body: RepositoryIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REPOSITORIES, attempted="connect repositories", request=request)
    repo = services.repository_connect(
        workspace=m.workspace, actor=request.user, request=request, **body.model_dump()
    )
    return Status(201, _repo_out(repo))


@router.patch(
    "/{slug}/repositories/{repo_id}",
    response=responses({200: RepositoryOut}, 400, 403, 404, 413, 422),
)
def repository_patch(request, slug: Slug, repo_id: Id, body: RepositoryPatch):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REPOSITORIES, attempted="change repositories", request=request)
    repo = get_object_or_404(Repository, pk=repo_id, workspace=m.workspace)
    repo = services.repository_update(
        repository=repo, actor=request.user, request=request, **body.model_dump()
    )
    return _repo_out(repo)


@router.delete(
    "/{slug}/repositories/{repo_id}", response=responses({204: None}, 400, 403, 404, 422)
)
def repository_delete(request, slug: Slug, repo_id: Id):
    """Disconnect: the repository is archived, never deleted; its reviews stay read-only and
    connecting it again restores them. Deleting them for good is `…/purge` (owners)."""
    m = _member(request, slug)
    require(m, Perm.MANAGE_REPOSITORIES, attempted="remove repositories", request=request)
    repo = get_object_or_404(Repository, pk=repo_id, workspace=m.workspace)
    services.repository_archive(repository=repo, actor=request.user, request=request)
    return Status(204, None)


@router.post(
    "/{slug}/repositories/{repo_id}/purge",
    response=responses({200: RepositoryPurgeOut}, 400, 403, 404, 413, 422),
)
def repository_purge(request, slug: Slug, repo_id: Id, body: RepositoryPurgeIn):
    """Delete a disconnected repository and all its reviews for good (owners only): the body
    must carry the repository's name exactly. Answers with what was deleted."""
    m = _member(request, slug)
    require(
        m, Perm.DELETE_REVIEWS, attempted="delete a repository's reviews for good", request=request
    )
    repo = get_object_or_404(Repository, pk=repo_id, workspace=m.workspace)
    deleted = services.repository_purge(
        repository=repo, actor=m, typed_name=body.confirm_name, request=request
    )
    return {"deleted": deleted}
