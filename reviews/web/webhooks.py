"""The GitHub webhook endpoint: signature first, then one processing per delivery id.

202 means accepted: rounds were queued, or the repository is disconnected (archived) and the
delivery deliberately ignored, with the reason in `detail`. 200: processed, nothing queued."""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from reviews.services.webhooks import webhook_receive
from reviews.sources.webhooks import verify_signature

log = logging.getLogger(__name__)


@csrf_exempt  # GitHub cannot send a CSRF token; the HMAC signature authenticates instead.
@require_POST
def github_webhook(request: HttpRequest) -> JsonResponse:
    secret = settings.GITHUB_WEBHOOK_SECRET
    if not secret:
        return JsonResponse({"detail": "Webhooks are not configured on this server."}, status=503)
    signature = request.headers.get("X-Hub-Signature-256")
    if not verify_signature(secret.encode(), request.body, signature):
        log.warning(
            "webhook with a bad or missing signature from %s", request.META.get("REMOTE_ADDR")
        )
        return JsonResponse({"detail": "Bad signature."}, status=401)
    event = request.headers.get("X-GitHub-Event", "")
    delivery = request.headers.get("X-GitHub-Delivery", "")
    if event == "ping":
        return JsonResponse({"detail": "pong"})
    if not delivery:
        return JsonResponse({"detail": "Missing X-GitHub-Delivery."}, status=400)
    try:
        payload = json.loads(request.body)
    except ValueError:
        return JsonResponse({"detail": "The body is not JSON."}, status=400)
    result = webhook_receive(delivery_id=delivery, event=event, payload=payload)
    log.info("webhook %s (%s): %s", delivery, event, result.detail)
    return JsonResponse(
        {"detail": result.detail, "rounds": [r.pk for r in result.rounds]}, status=result.status
    )
