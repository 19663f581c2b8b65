from django.contrib import admin
from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.urls import include, path

from config.api import api
from reviews.web.webhooks import github_webhook
from workspaces.views import account

handler500 = "config.errors.server_error"


def healthz(request):
    return JsonResponse({"status": "ok"})


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    # Browsers ask for /favicon.ico whatever the page links; the icon itself is a static SVG.
    return HttpResponseRedirect(static("favicon.svg"))


urlpatterns = [
    path("", account.home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("accounts/", include("allauth.urls")),
    path("account/tokens/", account.tokens, name="tokens"),
    path("api/v1/", api.urls),
    path("webhooks/github/", github_webhook, name="github_webhook"),
    path("admin/", admin.site.urls),
    path("", include("workspaces.urls")),
    path("", include("reviews.urls")),
    path("", include("guardrails.urls")),
]
