from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from django.conf import settings

from workspaces.services import invitations_accept


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return settings.QUORUM_OPEN_SIGNUP

    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            invitations_accept(user=user)
        return user
