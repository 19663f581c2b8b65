"""Workspace API: rules, reviewer configs, members, repositories. Same checks as the pages."""

from __future__ import annotations

from typing import Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict

from workspaces import services
from workspaces.models import Invitation, Membership, Repository, ReviewerConfig
from workspaces.permissions import membership_get, require
from workspaces.rules import Perm

router = Router(tags=["workspaces"])

TierName = Literal["light", "balanced", "thorough", "adaptive"]
RoleName = Literal["owner", "admin", "approver", "reviewer", "viewer"]
AxisName = Literal["visual", "apiContract", "performance"]


class Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class WorkspaceOut(Schema):
    slug: str
    name: str
    role: str


class RulesOut(Schema):
    tier: str
    gated_axes: list[str]


class RulesIn(Strict):
    tier: TierName
    gated_axes: list[AxisName] = Field(default_factory=list)


class FewShot(Strict):
    excerpt: str = Field(min_length=1)
    good: str = Field(min_length=1)
    bad: str = ""


class Criterion(Strict):
    name: str = Field(min_length=1)
    weight: float = Field(gt=0, le=10)


class ReviewerOut(Schema):
    key: str
    name: str
    base_agent: str
    brief: str
    builtin: bool
    enabled: bool
    model_provider: str
    model_name: str
    instructions: str
    anti_patterns: list[str]
    criteria: list[Criterion]
    few_shots: list[FewShot]
    calibrated_model: str
    calibration_stale: bool


class ReviewerPatch(Strict):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    base_agent: (
        Literal["implementation", "quality", "architecture", "requirements", "combined"] | None
    ) = None
    brief: str | None = None
    enabled: bool | None = None
    model_provider: Literal["", "openai", "anthropic"] | None = None
    model_name: str | None = Field(default=None, max_length=200)
    instructions: str | None = None
    anti_patterns: list[str] | None = None
    criteria: list[Criterion] | None = None
    few_shots: list[FewShot] | None = None
    calibrated_model: str | None = Field(default=None, max_length=220)


class ReviewerCreate(ReviewerPatch):
    key: str = Field(min_length=1, max_length=50)
    name: str = Field(min_length=1, max_length=100)
    base_agent: Literal["implementation", "quality", "architecture", "requirements", "combined"]


class MemberOut(Schema):
    id: int
    email: str
    role: str


class InvitationOut(Schema):
    id: int
    email: str
    role: str
    pending: bool = True


class InviteIn(Strict):
    email: str = Field(min_length=3, max_length=254)
    role: RoleName


class RoleIn(Strict):
    role: RoleName


class RepositoryOut(Schema):
    id: int
    kind: str
    name: str
    base_branch: str
    auto_review: bool


class RepositoryIn(Strict):
    kind: Literal["github", "local"]
    name: str = Field(min_length=1, max_length=1024)
    base_branch: str = "main"
    auto_review: bool = False


class RepositoryPatch(Strict):
    base_branch: str | None = None
    auto_review: bool | None = None


def _member(request, slug: str) -> Membership:
    return membership_get(user=request.user, slug=slug)


def _reviewer_out(cfg: ReviewerConfig) -> dict:
    out = {f: getattr(cfg, f) for f in ReviewerOut.model_fields if f != "calibration_stale"}
    return {**out, "calibration_stale": cfg.calibration_stale}


def _repo_out(repo: Repository) -> dict:
    return {
        "id": repo.pk,
        "kind": repo.kind,
        "name": str(repo),
        "base_branch": repo.base_branch,
        "auto_review": repo.auto_review,
    }


def _dump(schema: Schema) -> dict:
    return schema.model_dump(exclude_unset=True, mode="json")


@router.get("", response=list[WorkspaceOut])
def workspace_list(request):
    rows = Membership.objects.filter(user=request.user).select_related("workspace")
    return [{"slug": m.workspace.slug, "name": m.workspace.name, "role": m.role} for m in rows]


@router.get("/{slug}/rules", response=RulesOut)
def rules_get(request, slug: str):
    return _member(request, slug).workspace


@router.put("/{slug}/rules", response=RulesOut)
def rules_put(request, slug: str, body: RulesIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_RULES, attempted="change the workspace rules", request=request)
    return services.rules_update(
        workspace=m.workspace,
        actor=request.user,
        tier=body.tier,
        gated_axes=list(body.gated_axes),
        request=request,
    )


@router.get("/{slug}/reviewers", response=list[ReviewerOut])
def reviewer_list(request, slug: str):
    return [_reviewer_out(c) for c in _member(request, slug).workspace.reviewers.all()]


@router.get("/{slug}/reviewers/{key}", response=ReviewerOut)
def reviewer_get(request, slug: str, key: str):
    m = _member(request, slug)
    return _reviewer_out(get_object_or_404(ReviewerConfig, workspace=m.workspace, key=key))


@router.post("/{slug}/reviewers", response={201: ReviewerOut})
def reviewer_create(request, slug: str, body: ReviewerCreate):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REVIEWERS, attempted="add reviewers", request=request)
    data = _dump(body)
    key = data.pop("key")
    cfg = services.reviewer_config_create(
        workspace=m.workspace, actor=request.user, key=key, data=data, request=request
    )
    return Status(201, _reviewer_out(cfg))


@router.patch("/{slug}/reviewers/{key}", response=ReviewerOut)
def reviewer_patch(request, slug: str, key: str, body: ReviewerPatch):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REVIEWERS, attempted="change reviewer configs", request=request)
    cfg = get_object_or_404(ReviewerConfig, workspace=m.workspace, key=key)
    data = {k: v for k, v in _dump(body).items() if v is not None}
    return _reviewer_out(
        services.reviewer_config_update(config=cfg, actor=request.user, data=data, request=request)
    )


@router.delete("/{slug}/reviewers/{key}", response={204: None})
def reviewer_delete(request, slug: str, key: str):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REVIEWERS, attempted="delete reviewers", request=request)
    cfg = get_object_or_404(ReviewerConfig, workspace=m.workspace, key=key)
    services.reviewer_config_delete(config=cfg, actor=request.user, request=request)
    return Status(204, None)


@router.get("/{slug}/members", response=list[MemberOut | InvitationOut])
def member_list(request, slug: str):
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


@router.post("/{slug}/members", response={201: MemberOut | InvitationOut})
def member_invite(request, slug: str, body: InviteIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_MEMBERS, attempted="invite members", request=request)
    result = services.member_invite(actor=m, email=body.email, role=body.role, request=request)
    if isinstance(result, Invitation):
        out = {"id": result.pk, "email": result.email, "role": result.role, "pending": True}
        return Status(201, out)
    return Status(201, {"id": result.pk, "email": result.user.email, "role": result.role})


@router.patch("/{slug}/members/{member_id}", response=MemberOut)
def member_role(request, slug: str, member_id: int, body: RoleIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_MEMBERS, attempted="change members", request=request)
    target = get_object_or_404(
        Membership.objects.select_related("user"), pk=member_id, workspace=m.workspace
    )
    target = services.member_change_role(
        actor=m, membership=target, role=body.role, request=request
    )
    return {"id": target.pk, "email": target.user.email, "role": target.role}


@router.delete("/{slug}/members/{member_id}", response={204: None})
def member_remove(request, slug: str, member_id: int):
    m = _member(request, slug)
    require(m, Perm.MANAGE_MEMBERS, attempted="remove members", request=request)
    target = get_object_or_404(
        Membership.objects.select_related("user"), pk=member_id, workspace=m.workspace
    )
    services.member_remove(actor=m, membership=target, request=request)
    return Status(204, None)


@router.get("/{slug}/repositories", response=list[RepositoryOut])
def repository_list(request, slug: str):
    return [_repo_out(r) for r in _member(request, slug).workspace.repositories.all()]


@router.post("/{slug}/repositories", response={201: RepositoryOut})
def repository_connect(request, slug: str, body: RepositoryIn):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REPOSITORIES, attempted="connect repositories", request=request)
    repo = services.repository_connect(
        workspace=m.workspace, actor=request.user, request=request, **body.model_dump()
    )
    return Status(201, _repo_out(repo))


@router.patch("/{slug}/repositories/{repo_id}", response=RepositoryOut)
def repository_patch(request, slug: str, repo_id: int, body: RepositoryPatch):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REPOSITORIES, attempted="change repositories", request=request)
    repo = get_object_or_404(Repository, pk=repo_id, workspace=m.workspace)
    repo = services.repository_update(
        repository=repo, actor=request.user, request=request, **body.model_dump()
    )
    return _repo_out(repo)


@router.delete("/{slug}/repositories/{repo_id}", response={204: None})
def repository_delete(request, slug: str, repo_id: int):
    m = _member(request, slug)
    require(m, Perm.MANAGE_REPOSITORIES, attempted="remove repositories", request=request)
    repo = get_object_or_404(Repository, pk=repo_id, workspace=m.workspace)
    services.repository_remove(repository=repo, actor=request.user, request=request)
    return Status(204, None)
