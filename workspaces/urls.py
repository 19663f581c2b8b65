from django.urls import path

from workspaces import views

app_name = "workspaces"

urlpatterns = [
    path("new/", views.workspace_create, name="create"),
    path("invitations/<str:token>/", views.invitation_accept, name="invitation_accept"),
    path("w/<slug:slug>/settings/", views.general, name="general"),
    path("w/<slug:slug>/settings/prices/", views.prices, name="prices"),
    path("w/<slug:slug>/spend/", views.spend, name="spend"),
    path("w/<slug:slug>/settings/budgets/", views.budgets, name="budgets"),
    path("w/<slug:slug>/settings/github-handle/", views.github_handle, name="github_handle"),
    path("w/<slug:slug>/settings/members/", views.members, name="members"),
    path("w/<slug:slug>/settings/members/<int:member_id>/", views.member_change, name="member"),
    path(
        "w/<slug:slug>/settings/invitations/<int:invitation_id>/revoke/",
        views.invitation_revoke,
        name="invitation_revoke",
    ),
    path("w/<slug:slug>/settings/reviewers/", views.reviewers, name="reviewers"),
    path("w/<slug:slug>/settings/reviewers/new/", views.reviewer_edit, name="reviewer_new"),
    path("w/<slug:slug>/settings/reviewers/<slug:key>/", views.reviewer_edit, name="reviewer"),
    path(
        "w/<slug:slug>/settings/reviewers/<slug:key>/proposals/<int:proposal_id>/",
        views.reviewer_proposal,
        name="reviewer_proposal",
    ),
    path("w/<slug:slug>/settings/repositories/", views.repositories, name="repositories"),
    path(
        "w/<slug:slug>/settings/repositories/<int:repo_id>/",
        views.repository_change,
        name="repository",
    ),
    path(
        "w/<slug:slug>/settings/repositories/<int:repo_id>/disconnect/",
        views.repository_disconnect,
        name="repository_disconnect",
    ),
    path(
        "w/<slug:slug>/settings/repositories/<int:repo_id>/delete/",
        views.repository_delete,
        name="repository_delete",
    ),
    path("w/<slug:slug>/deleted/<slug:kind>/<str:object_id>/", views.deleted, name="deleted"),
]
