from django.urls import path

from guardrails import views

app_name = "guardrails"

urlpatterns = [
    path("w/<slug:slug>/approvals/", views.approvals, name="approvals"),
    path(
        "w/<slug:slug>/approvals/<int:request_id>/decide/", views.approval_decision, name="decide"
    ),
    path(
        "w/<slug:slug>/approvals/<int:request_id>/withdraw/",
        views.approval_withdraw_view,
        name="withdraw",
    ),
    path("w/<slug:slug>/audit/", views.audit, name="audit"),
    path("w/<slug:slug>/audit/export.<str:fmt>", views.audit_export, name="audit_export"),
    path("w/<slug:slug>/settings/guardrails/", views.guardrail_settings, name="settings"),
    path("w/<slug:slug>/settings/guardrails/webhook/", views.webhook_settings, name="webhook"),
]
