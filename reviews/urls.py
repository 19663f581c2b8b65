from django.urls import path

from reviews import views

app_name = "reviews"

urlpatterns = [
    path("w/<slug:slug>/reviews/", views.review_list, name="list"),
]
