"""Seed a database for fuzzing the API: the demo workspace, its sample review, and a token.

`python -m tests.api_fuzz.seed` (with the server's DATABASE_URL) prints a fresh personal API
token of the demo owner on stdout; .ci/run hands it to schemathesis.
"""

from __future__ import annotations

import io
import os


def seed() -> str:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from workspaces.services import api_token_create

    # demo_setup is idempotent: a re-run refreshes the users and keeps the sample review.
    call_command("demo_setup", password="fuzz-only-password", stdout=io.StringIO())
    owner = get_user_model().objects.get(email="admin@example.com")
    _token, secret = api_token_create(user=owner, name="schemathesis")
    return secret


if __name__ == "__main__":
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    print(seed())
