from django.apps import AppConfig

from guardrails.keys import warn_if_derived


class GuardrailsConfig(AppConfig):
    name = "guardrails"
    verbose_name = "Guardrails and audit"

    def ready(self) -> None:
        from guardrails.actions import register
        from guardrails.services.policies import POLICY_CHANGE

        warn_if_derived()
        # Guardrails' own action class; the apps it guards register theirs in their ready().
        register(POLICY_CHANGE)
