from django.urls import path

from reviews.web import (
    github_replies,
    node_actions,
    report_views,
    review_pages,
    round_actions,
    threads_ask,
)

app_name = "reviews"

urlpatterns = [
    path("w/<slug:slug>/reviews/", review_pages.review_list, name="list"),
    path("w/<slug:slug>/reviews/<int:space_id>/", review_pages.review_detail, name="detail"),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/report.md", report_views.review_report, name="report"
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/report/",
        report_views.review_report_page,
        name="report_page",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/report.json",
        report_views.review_report_json,
        name="report_json",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/report.sarif",
        report_views.review_report_sarif,
        name="report_sarif",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/flag/clear/",
        round_actions.flag_clear,
        name="flag_clear",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/rounds/<int:number>/api-breaks/accept/",
        round_actions.api_breaks_accept_view,
        name="api_breaks_accept",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/nodes/<int:node_id>/",
        node_actions.node_action,
        name="node_action",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/disagreements/<int:node_id>/decide/",
        node_actions.disagreement_decide,
        name="disagreement_decide",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/cohorts/<str:key>/read/",
        node_actions.cohort_read,
        name="cohort_read",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/findings/",
        review_pages.findings_more,
        name="findings_more",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/cohorts/<str:key>/previews/",
        review_pages.cohort_previews,
        name="cohort_previews",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/files/viewed/",
        node_actions.file_viewed,
        name="file_viewed",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/threads/<str:key>/",
        node_actions.thread_post,
        name="thread_post",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/messages/<int:message_id>/edit/",
        node_actions.thread_edit,
        name="thread_edit",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/request/",
        round_actions.supply_request,
        name="request",
    ),
    path("w/<slug:slug>/reviews/<int:space_id>/cancel/", round_actions.cancel_round, name="cancel"),
    path("w/<slug:slug>/reviews/<int:space_id>/rerun/", round_actions.rerun_round, name="rerun"),
    path("w/<slug:slug>/reviews/<int:space_id>/publish/", round_actions.publish, name="publish"),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/tickets/<int:ticket_id>/dismiss/",
        round_actions.ticket_dismiss,
        name="ticket_dismiss",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/messages/<int:message_id>/post-on-github/",
        github_replies.answer_post,
        name="answer_post",
    ),
    path(
        "w/<slug:slug>/reviews/<int:space_id>/tickets/<int:ticket_id>/issue/",
        round_actions.ticket_issue,
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
