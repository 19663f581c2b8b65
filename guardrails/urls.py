from django.urls import path

from guardrails import views

app_name = "guardrails"

urlpatterns = [
    path("w/<slug:slug>/approvals/", views.approvals, name="approvals"),
    path("w/<slug:slug>/audit/", views.audit, name="audit"),
]
