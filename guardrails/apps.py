from django.apps import AppConfig


class GuardrailsConfig(AppConfig):
    name = "guardrails"
    verbose_name = "Guardrails and audit"

    def ready(self) -> None:
        from guardrails.keys import warn_if_derived

        warn_if_derived()
