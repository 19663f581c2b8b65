"""The one adapter for GitHub's REST API (its documented REST contract).

Handles the headers GitHub requires, app or token authentication, rate limits and server errors
with bounded waits, and turns every failure into a GitHubError that says whether a retry helps.
"""

from __future__ import annotations

import base64
import email.utils
import functools
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import tenacity

from reviews.sources.github_auth import Auth, Clock, GitHubApp
from reviews.sources.github_errors import (
    DiffTooLarge,
    GitHubAuthError,
    GitHubError,
    GitHubForbidden,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubUnavailable,
    GitHubValidationError,
)
from reviews.sources.github_names import path_name, path_number, path_sha

__all__ = [
    "DiffTooLarge",
    "GitHubAuthError",
    "GitHubClient",
    "GitHubError",
    "GitHubForbidden",
    "GitHubNotFound",
    "GitHubRateLimited",
    "GitHubUnavailable",
    "GitHubValidationError",
    "GitRemote",
]

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
JSON_MEDIA = "application/vnd.github+json"
DIFF_MEDIA = "application/vnd.github.diff"
REVIEW_EVENTS = frozenset({"APPROVE", "REQUEST_CHANGES", "COMMENT"})
MAX_FILE_PAGES = 30  # GitHub lists at most 3,000 files, 100 a page


Sleep = Callable[[float], None]


@dataclass(frozen=True)
class GitRemote:
    """Where to fetch a repository and the header git must send (see worktrees.ensure_remote)."""

    url: str
    auth_header: str | None = field(default=None, repr=False)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every GitHub client of the process. Building one reads the CA bundle
    (about 30 ms of CPU, 15 % of a worker's CPU in the burst benchmark), and every task that
    talks to GitHub builds a client. It holds no connection: threads share it safely."""
    return httpx.create_ssl_context()


class GitHubClient:
    def __init__(
        self,
        auth: Auth,
        *,
        base_url: str = DEFAULT_API_URL,
        git_url: str | None = None,
        user_agent: str = "Quorum-AI-Review",
        timeout: float = 30.0,
        max_attempts: int = 5,
        max_wait: float = 900.0,
        secondary_wait: float = 60.0,
        server_error_wait: float = 1.0,
        sleep: Sleep = time.sleep,
        clock: Clock = time.time,
    ) -> None:
        """`max_attempts` bounds tries per call; a required wait longer than `max_wait` is not
        slept but raised as GitHubRateLimited(retry_at=…) so a task can be rescheduled instead."""
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.git_url = (git_url or _default_git_url(self.base_url)).rstrip("/")
        self._auth = auth
        self._max_attempts = max_attempts
        self._max_wait = max_wait
        self._secondary_wait = secondary_wait
        self._server_error_wait = server_error_wait
        self._sleep = sleep
        self._clock = clock
        self._http = httpx.Client(
            verify=_tls_context(),
            timeout=timeout,
            headers={"User-Agent": user_agent, "X-GitHub-Api-Version": API_VERSION},
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API ------------------------------------------------------------------------

    def repository_installation(self, owner: str, repo: str) -> dict[str, Any]:
        """The app's installation on `owner/repo`; only an app identity can ask."""
        if not isinstance(self._auth, GitHubApp):
            raise GitHubAuthError("only a GitHub App identity has installations")
        return self._auth.installation_of(self, owner, repo)

    def installation_repositories(self, installation: int) -> list[str]:
        """`owner/name` of every repository an installation of this app reaches, following
        `Link: rel="next"` 100 at a time; only an app identity can ask."""
        if not isinstance(self._auth, GitHubApp):
            raise GitHubAuthError("only a GitHub App identity has installations")
        token = self._auth.installation_token(self, installation)
        names: list[str] = []
        url = "/installation/repositories"
        params: dict[str, Any] | None = {"per_page": 100}
        for _ in range(MAX_FILE_PAGES):
            resp = self._request("GET", url, token=token, params=params)
            page = resp.json()
            try:
                names.extend(str(r["full_name"]) for r in page["repositories"])
            except (KeyError, TypeError) as exc:
                raise GitHubError(f"unexpected repositories page: {exc!r}") from exc
            next_url = resp.links.get("next", {}).get("url")
            if not next_url:
                break
            url, params = next_url, None
        return names

    def get_pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        return self._repo_call("GET", owner, repo, f"/pulls/{path_number(number)}").json()

    def list_pull_files(self, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        """Every changed file of the PR, following `Link: rel="next"` 100 at a time."""
        return self._pages(owner, repo, f"/pulls/{path_number(number)}/files", "files")

    def list_reviews(self, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        """The PR's reviews, oldest first, following `Link: rel="next"` 100 at a time: how a
        publication whose answer was lost is looked for afterwards."""
        return self._pages(owner, repo, f"/pulls/{path_number(number)}/reviews", "reviews")

    def _pages(self, owner: str, repo: str, path: str, what: str) -> list[dict[str, Any]]:
        """A listing's items, page after page (`Link: rel="next"`), at most MAX_FILE_PAGES."""
        items: list[dict[str, Any]] = []
        url: str | None = None
        for _ in range(MAX_FILE_PAGES):
            if url is None:
                resp = self._repo_call("GET", owner, repo, path, params={"per_page": 100})
            else:
                resp = self._repo_call("GET", owner, repo, url)
            page = resp.json()
            if not isinstance(page, list):
                raise GitHubError(f"unexpected {what} page: {type(page).__name__}")
            items.extend(page)
            url = resp.links.get("next", {}).get("url")
            if not url:
                break
        return items

    def get_pull_diff(self, owner: str, repo: str, number: int) -> str:
        """The PR's unified diff; DiffTooLarge when GitHub will not produce it (406)."""
        resp = self._repo_call(
            "GET", owner, repo, f"/pulls/{path_number(number)}", accept=DIFF_MEDIA
        )
        return resp.text

    def create_review(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        commit_id: str,
        body: str,
        event: str,
        comments: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """Submit one review (200). Not retried after it may have reached GitHub (see
        GitHubUnavailable.maybe_applied): a review must never be posted twice."""
        if event not in REVIEW_EVENTS:
            raise ValueError(f"event must be one of {sorted(REVIEW_EVENTS)}, got {event!r}")
        payload = {
            "commit_id": commit_id,
            "body": body,
            "event": event,
            "comments": [dict(c) for c in comments],
        }
        resp = self._repo_call(
            "POST",
            owner,
            repo,
            f"/pulls/{path_number(number)}/reviews",
            json=payload,
            idempotent=False,
        )
        return resp.json()

    def create_issue(self, owner: str, repo: str, *, title: str, body: str) -> dict[str, Any]:
        """Open one issue (201). Not retried after it may have reached GitHub: a retry could file
        it twice. 410 means the repository has issues turned off."""
        resp = self._repo_call(
            "POST",
            owner,
            repo,
            "/issues",
            json={"title": title, "body": body},
            expect=(201,),
            idempotent=False,
        )
        return resp.json()

    def list_review_comments(
        self, owner: str, repo: str, number: int, review_id: int
    ) -> list[dict[str, Any]]:
        """The inline comments of one review, with the ids GitHub gave them (the review's own
        answer does not carry them)."""
        path = f"/pulls/{path_number(number)}/reviews/{path_number(review_id)}/comments"
        page = self._repo_call("GET", owner, repo, path, params={"per_page": 100}).json()
        if not isinstance(page, list):
            raise GitHubError(f"unexpected review comments page: {type(page).__name__}")
        return page

    def reply_to_review_comment(
        self, owner: str, repo: str, number: int, comment_id: int, *, body: str
    ) -> dict[str, Any]:
        """Reply in a review comment's conversation (201). `comment_id` must be the
        conversation's top-level comment: GitHub refuses a reply to a reply. Not retried after
        it may have reached GitHub: a retry could post the reply twice."""
        path = f"/pulls/{path_number(number)}/comments/{path_number(comment_id)}/replies"
        resp = self._repo_call(
            "POST", owner, repo, path, json={"body": body}, expect=(201,), idempotent=False
        )
        return resp.json()

    def create_issue_comment(
        self, owner: str, repo: str, number: int, *, body: str
    ) -> dict[str, Any]:
        """A comment on the pull request's conversation (201); not retried once it may have
        reached GitHub."""
        path = f"/issues/{path_number(number)}/comments"
        resp = self._repo_call(
            "POST", owner, repo, path, json={"body": body}, expect=(201,), idempotent=False
        )
        return resp.json()

    @property
    def app_identity(self) -> bool:
        """A GitHub App: check runs can be posted (a token may only post commit statuses)."""
        return isinstance(self._auth, GitHubApp)

    def create_check_run(self, owner: str, repo: str, **fields: Any) -> dict[str, Any]:
        """Create one check run (201); only an app can. Not retried after it may have reached
        GitHub: the caller looks for it by name before creating another."""
        resp = self._repo_call(
            "POST", owner, repo, "/check-runs", json=fields, expect=(201,), idempotent=False
        )
        return resp.json()

    def update_check_run(
        self, owner: str, repo: str, check_run_id: int, **fields: Any
    ) -> dict[str, Any]:
        """Update a check run in place; the same PATCH twice leaves the same run, so retried."""
        path = f"/check-runs/{path_number(check_run_id)}"
        return self._repo_call("PATCH", owner, repo, path, json=fields).json()

    def find_check_runs(self, owner: str, repo: str, sha: str, name: str) -> list[dict[str, Any]]:
        """The check runs named `name` on commit `sha` (every app's; the caller filters)."""
        resp = self._repo_call(
            "GET",
            owner,
            repo,
            f"/commits/{path_sha(sha)}/check-runs",
            params={"check_name": name, "filter": "all", "per_page": 100},
        )
        runs = resp.json().get("check_runs")
        if not isinstance(runs, list):
            raise GitHubError("unexpected check runs page")
        return runs

    def create_commit_status(
        self, owner: str, repo: str, sha: str, **fields: Any
    ) -> dict[str, Any]:
        """Set a commit status (201). A context has one current state, so a repeat is harmless."""
        path = f"/statuses/{path_sha(sha)}"
        return self._repo_call("POST", owner, repo, path, json=fields, expect=(201,)).json()

    def git_remote(self, owner: str, repo: str) -> GitRemote:
        """Clone URL and the Authorization header git needs (tokens go as Basic x-access-token)."""
        path_name(owner)
        path_name(repo)
        token = self._auth.token_for(self, owner, repo)
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode("ascii")
        return GitRemote(
            url=f"{self.git_url}/{owner}/{repo}.git", auth_header=f"Authorization: Basic {basic}"
        )

    # -- plumbing --------------------------------------------------------------------------

    def _repo_call(
        self,
        method: str,
        owner: str,
        repo: str,
        path: str,
        **kwargs: Any,
    ) -> httpx.Response:
        """A call on behalf of a repository: its token, and one retry with a fresh token on 401
        (an installation token can be revoked or expire early)."""
        prefix = f"/repos/{path_name(owner)}/{path_name(repo)}"
        target = path if path.startswith(("http://", "https://")) else prefix + path
        try:
            return self._request(
                method, target, token=self._auth.token_for(self, owner, repo), **kwargs
            )
        except GitHubAuthError:
            if not self._auth.forget(owner, repo):
                raise
            return self._request(
                method, target, token=self._auth.token_for(self, owner, repo), **kwargs
            )

    def _request(
        self,
        method: str,
        path_or_url: str,
        *,
        token: str,
        accept: str = JSON_MEDIA,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        expect: tuple[int, ...] = (200,),
        idempotent: bool = True,
    ) -> httpx.Response:
        url = self._url(path_or_url)
        shown = f"{method} {urlsplit(url).path}"
        headers = {"Accept": accept, "Authorization": f"Bearer {token}"}
        rate_limited = 0  # responses so far that asked us to wait

        def attempt(number: int) -> httpx.Response:
            """One try: the response, a GitHubError that no retry helps, or _TryAgain."""
            nonlocal rate_limited
            try:
                resp = self._http.request(method, url, headers=headers, params=params, json=json)
            except httpx.TransportError as exc:
                # A connect failure means nothing reached GitHub; anything later might have.
                sent = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                error = GitHubUnavailable(
                    f"{shown}: {type(exc).__name__}: {exc}", maybe_applied=sent
                )
                if sent and not idempotent:
                    raise error from exc
                error.__cause__ = exc
                raise _TryAgain(self._backoff(number), error) from exc
            if resp.status_code in expect:
                return resp
            wait = self._rate_limit_wait(resp, rate_limited)
            if wait is not None:
                rate_limited += 1
                limited = GitHubRateLimited(
                    f"{shown}: rate limited ({_message(resp)}); retry in {wait:.0f}s",
                    status=resp.status_code,
                    retry_at=self._clock() + wait,
                )
                if wait > self._max_wait:
                    raise limited
                raise _TryAgain(wait, limited)
            if resp.status_code >= 500:
                unavailable = GitHubUnavailable(
                    f"{shown}: {resp.status_code} {_message(resp)}",
                    status=resp.status_code,
                    maybe_applied=not idempotent,
                )
                if not idempotent:
                    raise unavailable
                raise _TryAgain(self._backoff(number), unavailable)
            raise _error_for(shown, resp)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_TryAgain),
            stop=tenacity.stop_after_attempt(self._max_attempts),
            wait=_wait_asked,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            for try_ in retrying:
                with try_:
                    return attempt(try_.retry_state.attempt_number)
        except _TryAgain as exc:  # the last attempt: what it failed with, as the caller's error
            raise exc.error from exc.error.__cause__
        raise AssertionError("unreachable")  # the last attempt always returns or raises

    def _url(self, path_or_url: str) -> str:
        if not path_or_url.startswith(("http://", "https://")):
            return self.base_url + path_or_url
        # Pagination links come from the server; never send the token to another origin.
        given, ours = urlsplit(path_or_url), urlsplit(self.base_url)
        if (given.scheme, given.netloc) != (ours.scheme, ours.netloc):
            raise GitHubError(f"refusing to follow a link to another origin: {given.netloc}")
        return path_or_url

    def _backoff(self, attempt: int) -> float:
        return min(self._server_error_wait * 2 ** (attempt - 1), 60.0)

    def _rate_limit_wait(self, resp: httpx.Response, previous: int) -> float | None:
        """Seconds to wait if `resp` is a rate limit (GitHub's rate-limit headers), else None."""
        if resp.status_code not in (403, 429):
            return None
        retry_after = resp.headers.get("retry-after")
        remaining = resp.headers.get("x-ratelimit-remaining")
        limited = (
            resp.status_code == 429
            or retry_after is not None
            or remaining == "0"
            or "rate limit" in _message(resp).lower()
        )
        if not limited:
            return None
        if retry_after is not None:
            seconds = _parse_retry_after(retry_after, self._clock())
            if seconds is not None:
                return seconds
        reset = resp.headers.get("x-ratelimit-reset")
        if remaining == "0" and reset and reset.isdigit():
            return max(float(reset) - self._clock(), 0.0) + 1.0
        # Secondary limit without instructions: at least a minute, doubling each time.
        return self._secondary_wait * 2**previous


class _TryAgain(Exception):
    """An attempt another may fix, after `wait` seconds; `error` is the caller's if none is
    left."""

    def __init__(self, wait: float, error: GitHubError) -> None:
        super().__init__(str(error))
        self.wait = wait
        self.error = error


def _wait_asked(state: tenacity.RetryCallState) -> float:
    """The wait the failed attempt asked for: GitHub's (Retry-After, the rate limit's reset)
    or the backoff for server errors and lost connections."""
    exc = state.outcome.exception() if state.outcome is not None else None
    return exc.wait if isinstance(exc, _TryAgain) else 0.0


def _parse_retry_after(value: str, now: float) -> float | None:
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - now, 0.0)


def _message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.reason_phrase
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return data["message"]
    return resp.reason_phrase


def _error_for(shown: str, resp: httpx.Response) -> GitHubError:
    try:
        data = resp.json()
    except ValueError:
        data = {}
    errors = data.get("errors") if isinstance(data, dict) else None
    errors = errors if isinstance(errors, list) else []
    status = resp.status_code
    text = f"{shown}: {status} {_message(resp)}"
    if status == 401:
        return GitHubAuthError(text, status=status, errors=errors)
    if status == 403:
        return GitHubForbidden(text, status=status, errors=errors)
    if status == 404:
        return GitHubNotFound(text, status=status, errors=errors)
    if status == 406 and any(isinstance(e, dict) and e.get("code") == "too_large" for e in errors):
        return DiffTooLarge(text, status=status, errors=errors)
    if status == 422:
        return GitHubValidationError(text, status=status, errors=errors)
    return GitHubError(text, status=status, errors=errors)


def _default_git_url(api_url: str) -> str:
    parts = urlsplit(api_url)
    if parts.netloc == "api.github.com":
        return f"{parts.scheme}://github.com"
    if parts.path.rstrip("/").endswith("/api/v3"):  # GitHub Enterprise Server
        return f"{parts.scheme}://{parts.netloc}"
    return api_url
