from django.apps import AppConfig


class GuardrailsConfig(AppConfig):
    name = "guardrails"
    verbose_name = "Guardrails and audit"
