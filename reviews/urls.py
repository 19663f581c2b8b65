from django.urls import path

from reviews.web import github_replies, threads_ask, views

app_name = "reviews"

urlpatterns = [
    path("w/<slug:slug>/reviews/", views.review_list, name="list"),
    path("w/<slug:slug>/reviews/<int:space_id>/", views.review_detail, name="detail"),
    path("w/<slug:slug>/reviews/<int:space_id>/report.md", views.review_report, name="report"),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/report/",
        views.review_report_page,
        name="report_page",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/report.json",
        views.review_report_json,
        name="report_json",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/report.sarif",
        views.review_report_sarif,
        name="report_sarif",
    ),
    path("w/<slug:slug>/reviews/<int:space_id>/flag/clear/", views.flag_clear, name="flag_clear"),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/rounds/<int:number>/api-breaks/accept/",
        views.api_breaks_accept_view,
        name="api_breaks_accept",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/nodes/<int:node_id>/",
        views.node_action,
        name="node_action",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/disagreements/<int:node_id>/decide/",
        views.disagreement_decide,
        name="disagreement_decide",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/cohorts/<str:key>/read/",
        views.cohort_read,
        name="cohort_read",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/findings/",
        views.findings_more,
        name="findings_more",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/cohorts/<str:key>/previews/",
        views.cohort_previews,
        name="cohort_previews",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/files/viewed/",
        views.file_viewed,
        name="file_viewed",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/threads/<str:key>/",
        views.thread_post,
        name="thread_post",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/messages/<int:message_id>/edit/",
        views.thread_edit,
        name="thread_edit",
    ),
    path("w/<slug:slug>/reviews/<int:space_id>/request/", views.supply_request, name="request"),
    path("w/<slug:slug>/reviews/<int:space_id>/cancel/", views.cancel_round, name="cancel"),
    path("w/<slug:slug>/reviews/<int:space_id>/rerun/", views.rerun_round, name="rerun"),
    path("w/<slug:slug>/reviews/<int:space_id>/publish/", views.publish, name="publish"),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/tickets/<int:ticket_id>/dismiss/",
        views.ticket_dismiss,
        name="ticket_dismiss",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/messages/<int:message_id>/post-on-github/",
        github_replies.answer_post,
        name="answer_post",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/tickets/<int:ticket_id>/issue/",
        views.ticket_issue,
        name="ticket_issue",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/threads/<str:key>/ask/",
        threads_ask.thread_ask,
        name="thread_ask",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/messages/<int:message_id>/proposal/",
        threads_ask.proposal_decide,
        name="proposal_decide",
    ),
]
