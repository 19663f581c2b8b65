"""How the GitHub client authenticates: a static token, or a GitHub App whose installation token
is minted from a signed JWT and cached until shortly before it expires. Kept apart from
github_client, which makes the REST and git calls, so the client takes any `Auth` and a test
can give it one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import httpx
import jwt

from reviews.sources.github_errors import (
    GitHubAuthError,
)
from reviews.sources.github_names import path_name

Clock = Callable[[], float]


class ClientRequests(Protocol):
    """What authentication needs of the client (github_client.GitHubClient): one request
    made with a given token."""

    def _request(
        self,
        method: str,
        path_or_url: str,
        *,
        token: str,
        accept: str = ...,
        params: Mapping[str, Any] | None = ...,
        json: Any = ...,
        expect: tuple[int, ...] = ...,
        idempotent: bool = ...,
    ) -> httpx.Response: ...


class Auth(Protocol):
    def token_for(self, client: ClientRequests, owner: str, repo: str) -> str: ...

    def forget(self, owner: str, repo: str) -> bool:
        """Drop a cached credential after a 401; True if a fresh one may work."""
        ...


class StaticToken:
    """A personal access token or any token obtained elsewhere (GITHUB_TOKEN)."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("empty GitHub token")
        self._token = token

    def token_for(self, client: ClientRequests, owner: str, repo: str) -> str:
        return self._token

    def forget(self, owner: str, repo: str) -> bool:
        return False

    def __repr__(self) -> str:
        return "StaticToken(***)"


@dataclass
class _CachedToken:
    token: str
    expires_at: float


class GitHubApp:
    """GitHub App authentication: app JWT → repository installation → installation token.

    Tokens live an hour; one is reused until `refresh_margin` seconds before it expires so a
    long review never starts a request with a token about to lapse.
    """

    def __init__(
        self,
        app_id: int | str,
        private_key: str | bytes,
        *,
        clock: Clock = time.time,
        refresh_margin: float = 300.0,
    ) -> None:
        self.app_id = str(app_id)
        self._private_key = private_key
        self._clock = clock
        self._refresh_margin = refresh_margin
        self._installations: dict[tuple[str, str], int] = {}
        self._tokens: dict[int, _CachedToken] = {}
        self._lock = threading.Lock()

    def app_jwt(self) -> str:
        now = int(self._clock())
        # iat in the past absorbs clock drift; exp stays under GitHub's 10-minute maximum.
        claims = {"iat": now - 60, "exp": now + 9 * 60, "iss": self.app_id}
        return jwt.encode(claims, self._private_key, algorithm="RS256")

    def installation_of(self, client: ClientRequests, owner: str, repo: str) -> dict[str, Any]:
        """The installation of this app on `owner/repo` (404 when the app is not installed)."""
        return client._request(
            "GET", f"/repos/{path_name(owner)}/{path_name(repo)}/installation", token=self.app_jwt()
        ).json()

    def token_for(self, client: ClientRequests, owner: str, repo: str) -> str:
        with self._lock:
            installation = self._installations.get((owner, repo))
            if installation is None:
                found = client._request(
                    "GET", f"/repos/{owner}/{repo}/installation", token=self.app_jwt()
                ).json()
                installation = int(found["id"])
                self._installations[(owner, repo)] = installation
            return self._installation_token(client, installation)

    def installation_token(self, client: ClientRequests, installation: int) -> str:
        """A token of one installation (to list what it reaches, say)."""
        with self._lock:
            return self._installation_token(client, int(installation))

    def _installation_token(self, client: ClientRequests, installation: int) -> str:
        """Called with self._lock held."""
        cached = self._tokens.get(installation)
        if cached is not None and self._clock() < cached.expires_at - self._refresh_margin:
            return cached.token
        created = client._request(
            "POST",
            f"/app/installations/{installation}/access_tokens",
            token=self.app_jwt(),
            expect=(201,),
        ).json()
        try:
            expires_at = datetime.fromisoformat(created["expires_at"]).timestamp()
            token = str(created["token"])
        except (KeyError, TypeError, ValueError) as exc:
            raise GitHubAuthError(f"malformed installation token response: {exc}") from exc
        self._tokens[installation] = _CachedToken(token, expires_at)
        return token

    def forget(self, owner: str, repo: str) -> bool:
        with self._lock:
            installation = self._installations.pop((owner, repo), None)
            if installation is None:
                return False
            self._tokens.pop(installation, None)
            return True

    def __repr__(self) -> str:
        return f"GitHubApp(app_id={self.app_id!r})"
