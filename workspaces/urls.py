from django.urls import path

from workspaces.views import account, members, repositories, reviewers, workspace_settings

app_name = "workspaces"

urlpatterns = [
    path("new/", account.workspace_create, name="create"),
    path("invitations/<str:token>/", account.invitation_accept, name="invitation_accept"),
    path("w/<slug:slug>/settings/", workspace_settings.general, name="general"),
    path("w/<slug:slug>/settings/prices/", workspace_settings.prices, name="prices"),
    path("w/<slug:slug>/spend/", workspace_settings.spend, name="spend"),
    path("w/<slug:slug>/settings/budgets/", workspace_settings.budgets, name="budgets"),
    path(
        "w/<slug:slug>/settings/github-handle/",
        workspace_settings.github_handle,
        name="github_handle",
    ),
    path("w/<slug:slug>/settings/members/", members.members, name="members"),
    path("w/<slug:slug>/settings/members/<int:member_id>/", members.member_change, name="member"),
    path(
        "w/<slug:slug>/settings/invitations/<int:invitation_id>/revoke/",
        members.invitation_revoke,
        name="invitation_revoke",
    ),
    path("w/<slug:slug>/settings/reviewers/", reviewers.reviewers, name="reviewers"),
    path("w/<slug:slug>/settings/reviewers/new/", reviewers.reviewer_edit, name="reviewer_new"),
    path("w/<slug:slug>/settings/reviewers/<slug:key>/", reviewers.reviewer_edit, name="reviewer"),
    path(
        "w/<slug:slug>/settings/reviewers/<slug:key>/proposals/<int:proposal_id>/",
        reviewers.reviewer_proposal,
        name="reviewer_proposal",
    ),
    path("w/<slug:slug>/settings/repositories/", repositories.repositories, name="repositories"),
    path(
        "w/<slug:slug>/settings/repositories/<int:repo_id>/",
        repositories.repository_change,
        name="repository",
    ),
    path(
        "w/<slug:slug>/settings/repositories/<int:repo_id>/disconnect/",
        repositories.repository_disconnect,
        name="repository_disconnect",
    ),
    path(
        "w/<slug:slug>/settings/repositories/<int:repo_id>/delete/",
        repositories.repository_delete,
        name="repository_delete",
    ),
    path(
        "w/<slug:slug>/deleted/<slug:kind>/<str:object_id>/", repositories.deleted, name="deleted"
    ),
]
