from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from workspaces.models import Membership
from workspaces.views import member_view


@member_view
def review_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    context = {"workspace": membership.workspace, "membership": membership}
    return render(request, "reviews/list.html", context)
