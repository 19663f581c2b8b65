"""The GitHub adapter built from settings: an app identity or a token."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from reviews.sources.github_auth import GitHubApp, StaticToken
from reviews.sources.github_client import GitHubClient


def github_configured() -> bool:
    return bool(
        settings.GITHUB_TOKEN or (settings.GITHUB_APP_ID and settings.GITHUB_APP_PRIVATE_KEY_PATH)
    )


def github_client() -> GitHubClient:
    if settings.GITHUB_APP_ID and settings.GITHUB_APP_PRIVATE_KEY_PATH:
        try:
            key = Path(settings.GITHUB_APP_PRIVATE_KEY_PATH).read_bytes()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"GITHUB_APP_PRIVATE_KEY_PATH cannot be read: {exc}"
            ) from exc
        auth: GitHubApp | StaticToken = GitHubApp(settings.GITHUB_APP_ID, key)
    elif settings.GITHUB_TOKEN:
        auth = StaticToken(settings.GITHUB_TOKEN)
    else:
        raise ImproperlyConfigured(
            "GitHub is not configured: set GITHUB_TOKEN, or GITHUB_APP_ID and "
            "GITHUB_APP_PRIVATE_KEY_PATH."
        )
    return GitHubClient(
        auth, base_url=settings.GITHUB_API_URL, git_url=settings.GITHUB_GIT_URL or None
    )


def github_app_mode() -> bool:
    """An app identity: repositories are reached through installations, which bind tenants."""
    return bool(settings.GITHUB_APP_ID and settings.GITHUB_APP_PRIVATE_KEY_PATH)


def installation_repositories(installation_id: int) -> list[str]:
    """`owner/name` of every repository the app's installation reaches, as GitHub says now."""
    with github_client() as client:
        return client.installation_repositories(installation_id)


def repository_installation(full_name: str) -> tuple[int, str]:
    """(installation id, account login) of the app's installation on `owner/name`."""
    owner, name = full_name.split("/", 1)
    with github_client() as client:
        found = client.repository_installation(owner, name)
    return int(found["id"]), str((found.get("account") or {}).get("login") or "")
