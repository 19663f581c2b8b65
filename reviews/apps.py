from django.apps import AppConfig
from django.conf import settings
from django.core.signals import request_started

from reviews.agents import call_limits


def _sweep_when_serving(sender, **kwargs) -> None:
    # Only a real ASGI server (not the test client) starts the embedded sweeper; in the full
    # stack the Celery workers sweep and this does nothing.
    from django.core.handlers.asgi import ASGIHandler

    if isinstance(sender, type) and issubclass(sender, ASGIHandler):
        from reviews.pipeline.sweeper import start_embedded_sweeper

        start_embedded_sweeper()


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"

    def ready(self) -> None:
        # Models are loaded only now. Registered here: the review actions guardrails runs, and
        # what disconnecting a repository or deleting its reviews cancels (workspaces/hooks.py).
        from reviews.services.approval_actions import approval_actions_register
        from reviews.services.repository_listeners import repository_listeners_register

        approval_actions_register()
        repository_listeners_register()
        call_limits.configure(
            per_process=settings.QUORUM_MODEL_CALLS_PER_PROCESS,
            per_provider=settings.QUORUM_MODEL_CALLS_PER_PROVIDER,
        )
        request_started.connect(_sweep_when_serving, dispatch_uid="reviews-embedded-sweeper")
