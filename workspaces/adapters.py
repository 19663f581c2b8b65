from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from django.conf import settings


class AccountAdapter(DefaultAccountAdapter):
    """Signing up grants nothing: invitations are accepted explicitly from their signed link."""

    def is_open_for_signup(self, request) -> bool:
        return settings.QUORUM_OPEN_SIGNUP
