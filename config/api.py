"""The HTTP API under /api/v1/. Each app contributes its own router."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied
from django.db import DataError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError
from ninja.security import HttpBearer, django_auth

from config.api_types import JSONParser
from config.application_errors import ApplicationError
from workspaces.services import api_token_authenticate


class ApiTokenAuth(HttpBearer):
    def authenticate(self, request, token):
        user = api_token_authenticate(token)
        if user is not None:
            request.user = user
        return user


api = NinjaAPI(
    title="Quorum API",
    version="1",
    description="Workspaces, rules, reviewers, repositories and reviews. Authenticate with a "
    "personal API token (Authorization: Bearer qrm_…) or a logged-in browser session.",
    auth=[ApiTokenAuth(), django_auth],
    urls_namespace="api",
    parser=JSONParser(),
)
log = logging.getLogger(__name__)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request, exc):
    return api.create_response(
        request,
        {
            "detail": "Authentication required: send a valid, unrevoked personal API token as "
            "'Authorization: Bearer <token>', or use a logged-in session."
        },
        status=401,
    )


@api.exception_handler(ApplicationError)
def _application_error(request, exc: ApplicationError):
    # The one place a domain or service error becomes an HTTP answer for the API: routes let
    # them through. {"detail": message, "code": code} plus any ids the error carries.
    return api.create_response(request, exc.body(), status=exc.http_status)


@api.exception_handler(PermissionDenied)
def _forbidden(request, exc):
    return api.create_response(request, {"detail": str(exc) or "Forbidden."}, status=403)


@api.exception_handler(DataError)
def _unstorable(request, exc):
    # A value the schemas let through but PostgreSQL cannot store (a bound missing from an
    # Input schema): still the client's input, so a 422, but logged as the schema gap it is.
    log.warning(
        "API input passed validation but not the database: %s %s: %s",
        request.method,
        request.path,
        exc,
    )
    return api.create_response(
        request,
        {"detail": [{"loc": ["body"], "msg": "a value cannot be stored", "type": "data_error"}]},
        status=422,
    )


from guardrails.api import router as guardrails_router  # noqa: E402
from reviews.api.asking import router as asking_router  # noqa: E402
from reviews.api.publishing import router as publishing_router  # noqa: E402
from reviews.api.routes import router as reviews_router  # noqa: E402
from reviews.api.threads import router as threads_router  # noqa: E402
from workspaces.api.routes import router as workspaces_router  # noqa: E402

api.add_router("/workspaces", workspaces_router)
api.add_router("/workspaces", reviews_router)
api.add_router("/workspaces", threads_router)
api.add_router("/workspaces", asking_router)
# Before the guardrails router: the publish request keeps its place in the schema.
api.add_router("/workspaces", publishing_router)
api.add_router("/workspaces", guardrails_router)
