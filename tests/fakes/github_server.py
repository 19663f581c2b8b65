"""A fake GitHub on 127.0.0.1: a real HTTP server enforcing GitHub's REST contract.

State is configured from tests (repositories backed by real local git repositories, pull
requests, tokens, a GitHub App) and every request is logged for assertions. Git itself is
served over smart HTTP through `git http-backend`, so `git fetch` runs against it like against
github.com, with the same token check.

    fake = FakeGitHub(clock=clock.time).start()
    fake.add_token("ghp_x", login="alice")
    fake.add_repo("acme", "app", repo.path)
    fake.add_pull("acme", "app", 7, base="main", head="feature", author="bob")
    client = GitHubClient(StaticToken("ghp_x"), base_url=fake.base_url)
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import subprocess
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt

from tests.fakes.github_diff import FakeDiff, pull_diff
from tests.fakes.gitrepo import git

API_VERSION = "2022-11-28"
DOCS = "https://docs.github.com/rest"
REVIEW_DOCS = "https://docs.github.com/rest/reference/pulls#create-a-review-for-a-pull-request"
ISSUE_DOCS = "https://docs.github.com/rest/issues/issues#create-an-issue"
CHECKS_DOCS = "https://docs.github.com/rest/checks/runs#create-a-check-run"
STATUS_DOCS = "https://docs.github.com/rest/commits/statuses#create-a-commit-status"
CHECK_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CHECK_CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)
COMMIT_STATES = ("error", "failure", "pending", "success")

# GitHub's real 422 bodies, verbatim.
LINE_NOT_IN_DIFF = (
    "Pull request review thread line must be part of the diff and "
    "Pull request review thread diff hunk can't be blank"
)
START_NOT_IN_HUNK = (
    "Pull request review thread line must be part of the diff, Pull request review thread "
    "start line must be part of the same hunk as the line., and Pull request review thread "
    "diff hunk can't be blank"
)
PATH_INVALID = (
    "Pull request review thread path is invalid and Pull request review thread diff hunk can't "
    "be blank"
)
# GitHub's documentation: a reply must name a top-level review comment; replies to replies are
# not supported. The exact answer is unconfirmed: a 422 naming the field, as its validation does.
REPLY_TO_REPLY = "in_reply_to must be a top-level review comment, not a reply"  # unconfirmed
OWN_APPROVE = "Can not approve your own pull request"
OWN_REQUEST_CHANGES = "Can not request changes on your own pull request"  # wording unconfirmed
REQUEST_CHANGES_BODY = "You need to leave a comment indicating the requested changes."
EMPTY_COMMENT = "Review body can't be blank"  # wording unconfirmed
ONE_PENDING = "User can only have one pending review per pull request"
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)
_STATES = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    json: Any
    status: int = 0


@dataclass
class FakePull:
    number: int
    base: str  # branch or SHA in the repository; resolved on every request
    head: str
    title: str = "A change"
    body: str | None = None
    draft: bool = False
    author: str = "octocat"
    state: str = "open"
    merged: bool = False
    reviews: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FakeRepo:
    owner: str
    name: str
    path: Path
    installation_id: int | None
    pulls: dict[int, FakePull] = field(default_factory=dict)
    # Issues as created through the API; `has_issues` False answers 410 as GitHub does when a
    # repository's Issues feature is turned off.
    issues: list[dict[str, Any]] = field(default_factory=list)
    has_issues: bool = True
    # Check runs (by id) and commit statuses (in the order posted), as created via the API.
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    # Pull request review comments by id (a review's inline comments and their replies), and
    # the comments on pull requests' conversations (GitHub's issue comments), in order.
    review_comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    issue_comments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass
class _Token:
    login: str
    expires_at: float | None = None  # installation tokens only
    installation_id: int | None = None


class _Hold:
    """A request kept waiting by FakeGitHub.hold."""

    def __init__(self, method: str, path: str, apply: bool) -> None:
        self.method, self.path, self.apply = method, path, apply
        self.entered = threading.Event()
        self.released = threading.Event()

    def release(self) -> None:
        self.released.set()


@dataclass
class _Fault:
    kind: str
    seconds: float | None
    method: str | None = None  # only requests with this method and a path matching `path`
    path: str | None = None
    after_apply: bool = False  # the request takes effect, then its answer is the fault


class _Reply(Exception):
    """Raised inside a handler to answer with a status, JSON body and headers."""

    def __init__(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


def _error(code: int, message: str, errors: list[Any] | None = None, **extra: Any) -> _Reply:
    body: dict[str, Any] = {"message": message, "documentation_url": DOCS}
    if errors is not None:
        body["errors"] = errors
    body.update(extra)
    return _Reply(code, body)


def _issue_invalid(detail: str) -> _Reply:
    """GitHub's schema validation answer for a malformed issue (422)."""
    return _error(422, f"Invalid request.\n\n{detail}", documentation_url=ISSUE_DOCS, status="422")


def _too_long(field_name: str, limit: int) -> dict[str, Any]:
    return {
        "resource": "Issue",
        "code": "custom",
        "field": field_name,
        "message": f"{field_name} is too long (maximum is {limit} characters)",
    }


def _unprocessable(error: str, *, new_form: bool = False) -> _Reply:
    extra = {"status": "422"} if new_form else {}
    reply = _error(422, "Unprocessable Entity", [error], **extra)
    reply.body["documentation_url"] = REVIEW_DOCS
    return reply


class FakeGitHub:
    """In-memory GitHub. Thread-safe: handlers run in server threads, tests in the main one."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] | None = None,
        diff_file_limit: int = 300,
        diff_line_limit: int = 20_000,
    ) -> None:
        import time

        self.clock = clock or time.time
        self.diff_file_limit = diff_file_limit
        self.diff_line_limit = diff_line_limit
        self.requests: list[RecordedRequest] = []
        # (path, line) anchors refused with GitHub's 422 even when they are in the diff: stands
        # in for the cases our local check cannot foresee (e.g. a push between check and post).
        self.rejected_anchors: set[tuple[str, int]] = set()
        self.repos: dict[tuple[str, str], FakeRepo] = {}
        self._tokens: dict[str, _Token] = {}
        self._faults: list[_Fault] = []
        self._holds: list[_Hold] = []
        self._app_id: str | None = None
        self._app_public_key: Any = None
        self._app_slug = "quorum"
        self._review_ids = iter(range(80_000_001, 90_000_000))
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # A short poll interval keeps shutdown (once per test) from costing half a second.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def clone_url(self, owner: str, name: str) -> str:
        """Smart-HTTP URL (git fetch/clone work; auth as Basic x-access-token:<token>)."""
        return f"{self.base_url}/{owner}/{name}.git"

    # -- configuration ---------------------------------------------------------------------

    def add_token(self, token: str, *, login: str = "octocat") -> None:
        with self._lock:
            self._tokens[token] = _Token(login=login)

    def configure_app(self, app_id: int | str, public_key_pem: bytes | str, *, slug: str) -> None:
        """Accept app JWTs signed by the matching private key; tokens act as `<slug>[bot]`."""
        with self._lock:
            self._app_id = str(app_id)
            self._app_public_key = public_key_pem
            self._app_slug = slug

    def add_repo(
        self, owner: str, name: str, path: Path | str, *, installation_id: int | None = 1
    ) -> FakeRepo:
        with self._lock:
            repo = FakeRepo(owner, name, Path(path), installation_id)
            self.repos[(owner, name)] = repo
            return repo

    def set_installation(self, owner: str, name: str, installation_id: int | None) -> None:
        """Add the repository to an installation, or (None) remove it from its installation."""
        with self._lock:
            self.repos[(owner, name)].installation_id = installation_id

    def add_pull(self, owner: str, name: str, number: int, **fields: Any) -> FakePull:
        """`base`/`head` are branches (or SHAs) of the repository; other fields as FakePull."""
        with self._lock:
            pull = FakePull(number=number, **fields)
            self.repos[(owner, name)].pulls[number] = pull
            return pull

    def inject(
        self,
        kind: str,
        *,
        count: int = 1,
        seconds: float | None = None,
        method: str | None = None,
        path: str | None = None,
        after_apply: bool = False,
    ) -> None:
        """Answer the next `count` API requests with a fault instead of the real answer.

        kinds: "secondary" (403 + Retry-After: seconds, default 60), "secondary_bare" (403,
        message only), "429" (Retry-After if seconds given), "primary" (403, remaining 0, reset
        in `seconds`), "500" / "502" / "503". With `method`/`path` (a regular expression) only
        matching requests get it; `after_apply` lets the request take effect first and then
        answers with the fault (a lost answer: the client cannot know it was applied).
        """
        if kind not in ("secondary", "secondary_bare", "429", "primary", "500", "502", "503"):
            raise ValueError(f"unknown fault {kind!r}")
        with self._lock:
            self._faults.extend(
                _Fault(kind, seconds, method, path, after_apply) for _ in range(count)
            )

    def hold(self, method: str, path: str, *, apply: bool) -> _Hold:
        """Keep the next request matching `method` and `path` (a regular expression) waiting,
        as a slow GitHub would, until `release()`; `entered` is set once it arrived. Released,
        it takes effect (`apply`) or not, and its answer goes to a client that may be gone."""
        held = _Hold(method, path, apply)
        with self._lock:
            self._holds.append(held)
        return held

    def revoke_installation_tokens(self) -> None:
        """Invalidate every issued installation token (as DELETE /installation/token would)."""
        with self._lock:
            for token in self.installation_tokens:
                del self._tokens[token]

    # -- observation -----------------------------------------------------------------------

    def reviews(self, owner: str, name: str, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self.repos[(owner, name)].pulls[number].reviews]

    def issues(self, owner: str, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(i) for i in self.repos[(owner, name)].issues]

    def review_comments(self, owner: str, name: str) -> list[dict[str, Any]]:
        """Every review comment of the repository (inline comments and replies), by id."""
        with self._lock:
            repo = self.repos[(owner, name)]
            return [dict(repo.review_comments[k]) for k in sorted(repo.review_comments)]

    def issue_comments(self, owner: str, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self.repos[(owner, name)].issue_comments]

    def reply_as(
        self, owner: str, name: str, number: int, comment_id: int, body: str, *, login: str
    ) -> dict[str, Any]:
        """Someone replies on GitHub's page to review comment `comment_id`: as GitHub's page
        does, the reply joins the conversation of its top-level comment."""
        with self._lock:
            repo = self.repos[(owner, name)]
            parent = repo.review_comments[comment_id]
            root = parent.get("in_reply_to_id") or comment_id
            return self._new_review_comment(
                repo, number, repo.review_comments[root], body, login=login, in_reply_to=root
            )

    def comment_as(
        self, owner: str, name: str, number: int, body: str, *, login: str, bot: bool = False
    ) -> dict[str, Any]:
        """Someone comments on the pull request's conversation tab."""
        with self._lock:
            repo = self.repos[(owner, name)]
            return self._new_issue_comment(repo, number, body, login=login, bot=bot)

    def check_runs(self, owner: str, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self.repos[(owner, name)].check_runs.values()]

    def statuses(self, owner: str, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self.repos[(owner, name)].statuses]

    def requests_to(self, method: str, path_pattern: str) -> list[RecordedRequest]:
        with self._lock:
            return [
                r
                for r in self.requests
                if r.method == method and re.fullmatch(path_pattern, r.path) is not None
            ]

    @property
    def installation_tokens(self) -> list[str]:
        with self._lock:
            return [t for t, info in self._tokens.items() if info.installation_id is not None]

    # -- request handling (called from server threads) -------------------------------------

    def _take_fault(self, req: RecordedRequest) -> _Fault | None:
        with self._lock:
            for index, fault in enumerate(self._faults):
                if fault.method is not None and fault.method != req.method:
                    continue
                if fault.path is not None and re.fullmatch(fault.path, req.path) is None:
                    continue
                return self._faults.pop(index)
            return None

    def _take_hold(self, req: RecordedRequest) -> _Hold | None:
        with self._lock:
            for index, held in enumerate(self._holds):
                if held.method == req.method and re.fullmatch(held.path, req.path):
                    return self._holds.pop(index)
            return None

    def _fault_reply(self, fault: _Fault) -> _Reply:
        now = int(self.clock())
        headers = self._rate_headers(remaining=4999)
        if fault.kind == "secondary":
            headers["Retry-After"] = str(int(fault.seconds if fault.seconds is not None else 60))
            return _Reply(403, {"message": SECONDARY_MESSAGE, "documentation_url": DOCS}, headers)
        if fault.kind == "secondary_bare":
            return _Reply(403, {"message": SECONDARY_MESSAGE, "documentation_url": DOCS}, headers)
        if fault.kind == "429":
            if fault.seconds is not None:
                headers["Retry-After"] = str(int(fault.seconds))
            return _Reply(429, {"message": SECONDARY_MESSAGE, "documentation_url": DOCS}, headers)
        if fault.kind == "primary":
            headers = self._rate_headers(remaining=0)
            headers["x-ratelimit-reset"] = str(now + int(fault.seconds or 3600))
            message = "API rate limit exceeded for installation."
            return _Reply(403, {"message": message, "documentation_url": DOCS}, headers)
        status = int(fault.kind)
        return _Reply(status, {"message": "Server Error"}, headers)

    def _rate_headers(self, *, remaining: int = 4999) -> dict[str, str]:
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-used": str(5000 - remaining),
            "x-ratelimit-reset": str(int(self.clock()) + 3600),
            "x-ratelimit-resource": "core",
        }

    def _identity(self, authorization: str | None) -> _Token:
        token = _bearer(authorization)
        with self._lock:
            info = self._tokens.get(token or "")
        if info is None or (info.expires_at is not None and info.expires_at <= self.clock()):
            raise _error(401, "Bad credentials", status="401")
        return info

    def _verify_app_jwt(self, authorization: str | None) -> None:
        token = _bearer(authorization)
        if not token or self._app_public_key is None:
            raise _error(401, "A JSON web token could not be decoded", status="401")
        try:
            # Times are checked below against the fake's clock, not the wall clock.
            claims = jwt.decode(
                token,
                self._app_public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except jwt.PyJWTError:
            raise _error(401, "A JSON web token could not be decoded", status="401") from None
        now = self.clock()
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, int) or not isinstance(iat, int):
            raise _error(
                401, "'Expiration time' claim ('exp') must be a numeric value", status="401"
            )
        if exp > now + 600:
            raise _error(
                401, "'Expiration time' claim ('exp') is too far in the future", status="401"
            )
        if exp <= now:
            raise _error(401, "'Expiration time' claim ('exp') is in the past", status="401")
        if iat > now + 60:
            raise _error(401, "'Issued at' claim ('iat') must be in the past", status="401")
        if str(claims.get("iss")) != self._app_id:
            raise _error(401, "'Issuer' claim ('iss') must match the app", status="401")

    def _repo(self, owner: str, name: str, who: _Token) -> FakeRepo:
        with self._lock:
            repo = self.repos.get((owner, name))
        # An installation token sees only its installation's repositories; GitHub says 404.
        if repo is None or (
            who.installation_id is not None and who.installation_id != repo.installation_id
        ):
            raise _error(404, "Not Found", status="404")
        return repo

    def _pull(self, repo: FakeRepo, number: int) -> FakePull:
        pull = repo.pulls.get(number)
        if pull is None:
            raise _error(404, "Not Found", status="404")
        return pull

    def _shas(self, repo: FakeRepo, pull: FakePull) -> tuple[str, str]:
        base = git("rev-parse", f"{pull.base}^{{commit}}", cwd=repo.path).strip()
        head = git("rev-parse", f"{pull.head}^{{commit}}", cwd=repo.path).strip()
        return base, head

    def pull_json(self, repo: FakeRepo, pull: FakePull) -> dict[str, Any]:
        base_sha, head_sha = self._shas(repo, pull)
        api = f"{self.base_url}/repos/{repo.full_name}/pulls/{pull.number}"
        repo_json = {
            "full_name": repo.full_name,
            "clone_url": self.clone_url(repo.owner, repo.name),
        }
        return {
            "url": api,
            "number": pull.number,
            "state": pull.state,
            "title": pull.title,
            "body": pull.body,
            "draft": pull.draft,
            "merged": pull.merged,
            "user": {"login": pull.author, "type": "User"},
            "head": {"sha": head_sha, "ref": _ref_name(pull.head), "repo": repo_json},
            "base": {"sha": base_sha, "ref": _ref_name(pull.base), "repo": repo_json},
            "html_url": f"{self.base_url}/{repo.full_name}/pull/{pull.number}",
        }

    def diff_for(self, repo: FakeRepo, pull: FakePull, head_sha: str | None = None) -> FakeDiff:
        base_sha, current_head = self._shas(repo, pull)
        return pull_diff(repo.path, base_sha, head_sha or current_head)

    # -- endpoints -------------------------------------------------------------------------

    def get_pull(self, req: RecordedRequest, owner: str, name: str, number: int) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        pull = self._pull(repo, number)
        if req.headers.get("accept", "").startswith("application/vnd.github.diff"):
            diff = self.diff_for(repo, pull)
            if len(diff.files) > self.diff_file_limit or diff.line_count > self.diff_line_limit:
                raise _error(
                    406,
                    "Sorry, the diff exceeded the maximum number of files "
                    f"({self.diff_file_limit}). Consider using 'List pull requests files' API "
                    "or locally cloning the repository instead.",
                    [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
                )
            return _Reply(200, diff.text, {"Content-Type": "text/plain; charset=utf-8"})
        return _Reply(200, self.pull_json(repo, pull))

    def list_files(self, req: RecordedRequest, owner: str, name: str, number: int) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        pull = self._pull(repo, number)
        per_page = min(max(int(req.query.get("per_page", ["30"])[0]), 1), 100)
        page = max(int(req.query.get("page", ["1"])[0]), 1)
        _, head_sha = self._shas(repo, pull)
        files = self.diff_for(repo, pull).files[:3000]
        chunk = files[(page - 1) * per_page : page * per_page]
        last = max((len(files) + per_page - 1) // per_page, 1)
        base = f"{self.base_url}/repos/{owner}/{name}/pulls/{number}/files"
        rels = []
        if page < last:
            rels += [("next", page + 1), ("last", last)]
        if page > 1:
            rels += [("first", 1), ("prev", page - 1)]
        headers = {}
        if rels:
            headers["Link"] = ", ".join(
                f'<{base}?{urlencode({"per_page": per_page, "page": p})}>; rel="{rel}"'
                for rel, p in rels
            )
        body = []
        for f in chunk:
            raw = f"{self.base_url}/{owner}/{name}/raw/{head_sha}/{f.filename}"
            entry: dict[str, Any] = {
                "sha": f.sha,
                "filename": f.filename,
                "status": f.status,
                "additions": f.additions,
                "deletions": f.deletions,
                "changes": f.additions + f.deletions,
                "blob_url": f"{self.base_url}/{owner}/{name}/blob/{head_sha}/{f.filename}",
                "raw_url": raw,
                "contents_url": f"{self.base_url}/repos/{owner}/{name}/contents/{f.filename}",
            }
            if f.patch is not None:
                entry["patch"] = f.patch
            if f.previous_filename is not None:
                entry["previous_filename"] = f.previous_filename
            body.append(entry)
        return _Reply(200, body, headers)

    def list_reviews(self, req: RecordedRequest, owner: str, name: str, number: int) -> _Reply:
        """GET …/pulls/N/reviews: submitted reviews, oldest first, paginated with a Link header
        (a pending review shows only to its author)."""
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        pull = self._pull(repo, number)
        per_page = min(max(int(req.query.get("per_page", ["30"])[0]), 1), 100)
        page = max(int(req.query.get("page", ["1"])[0]), 1)
        with self._lock:
            shown = [
                {k: v for k, v in r.items() if k != "comments"}
                for r in pull.reviews
                if r["state"] != "PENDING" or r["user"]["login"] == who.login
            ]
        chunk = shown[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(shown):
            base = f"{self.base_url}/repos/{owner}/{name}/pulls/{number}/reviews"
            query = urlencode({"per_page": per_page, "page": page + 1})
            headers["Link"] = f'<{base}?{query}>; rel="next"'
        return _Reply(200, chunk, headers)

    def create_review(self, req: RecordedRequest, owner: str, name: str, number: int) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        pull = self._pull(repo, number)
        data = req.json
        if not isinstance(data, dict):
            raise _error(400, "Problems parsing JSON")
        event = data.get("event")
        body = data.get("body") or ""
        comments = data.get("comments") or []
        if event is not None and event not in _STATES:
            # Schema validation answer; exact wording unconfirmed.
            raise _error(
                422,
                "Invalid request.\n\nFor 'properties/event', "
                f"{json.dumps(event)} is not a member of "
                '["APPROVE", "REQUEST_CHANGES", "COMMENT"].',
            )
        _, head_sha = self._shas(repo, pull)
        commit_id = data.get("commit_id") or head_sha
        try:
            commit_id = git("rev-parse", "--verify", f"{commit_id}^{{commit}}", cwd=repo.path)
        except RuntimeError:
            raise _unprocessable(f"No commit found for SHA: {data.get('commit_id')}") from None
        commit_id = commit_id.strip()
        if who.login == pull.author and event == "APPROVE":
            raise _unprocessable(OWN_APPROVE)
        if who.login == pull.author and event == "REQUEST_CHANGES":
            raise _unprocessable(OWN_REQUEST_CHANGES)
        if event == "REQUEST_CHANGES" and not body.strip():
            raise _unprocessable(REQUEST_CHANGES_BODY)
        if event == "COMMENT" and not body.strip() and not comments:
            raise _unprocessable(EMPTY_COMMENT)
        diff = self.diff_for(repo, pull, head_sha=commit_id)
        for comment in comments:
            self._check_comment(diff, comment)
        with self._lock:
            if event is None and any(
                r["state"] == "PENDING" and r["user"]["login"] == who.login for r in pull.reviews
            ):
                raise _unprocessable(ONE_PENDING)
            review_id = next(self._review_ids)
            pr_url = f"{self.base_url}/{repo.full_name}/pull/{number}"
            review = {
                "id": review_id,
                "node_id": base64.b64encode(f"PRR_{review_id}".encode()).decode(),
                "user": {"login": who.login, "type": "Bot" if who.installation_id else "User"},
                "body": body,
                "state": _STATES.get(event, "PENDING"),
                "html_url": f"{pr_url}#pullrequestreview-{review_id}",
                "pull_request_url": f"{self.base_url}/repos/{repo.full_name}/pulls/{number}",
                "commit_id": commit_id,
                "author_association": "NONE",
            }
            if event is not None:
                review["submitted_at"] = _iso(self.clock())
            pull.reviews.append({**review, "comments": [dict(c) for c in comments]})
            for comment in comments:
                self._new_review_comment(
                    repo,
                    number,
                    comment,
                    comment["body"],
                    login=who.login,
                    bot=bool(who.installation_id),
                    review_id=review_id,
                    commit_id=commit_id,
                )
        return _Reply(200, review)

    def _new_review_comment(
        self,
        repo: FakeRepo,
        number: int,
        anchor: Mapping[str, Any],
        body: str,
        *,
        login: str,
        bot: bool = False,
        review_id: int | None = None,
        commit_id: str = "",
        in_reply_to: int | None = None,
    ) -> dict[str, Any]:
        """A review comment as GitHub stores and returns it (the lock is held)."""
        comment_id = next(self._review_ids)
        now = _iso(self.clock())
        comment: dict[str, Any] = {
            "id": comment_id,
            "node_id": base64.b64encode(f"PRRC_{comment_id}".encode()).decode(),
            # GitHub files a reply under a review of its own.
            "pull_request_review_id": review_id or next(self._review_ids),
            "path": anchor.get("path"),
            "line": anchor.get("line"),
            "side": anchor.get("side", "RIGHT"),
            "start_line": anchor.get("start_line"),
            "start_side": anchor.get("start_side"),
            "commit_id": commit_id or anchor.get("commit_id", ""),
            "user": {"login": login, "type": "Bot" if bot else "User"},
            "body": body,
            "created_at": now,
            "updated_at": now,
            "html_url": f"{self.base_url}/{repo.full_name}/pull/{number}#discussion_r{comment_id}",
            "pull_request_url": f"{self.base_url}/repos/{repo.full_name}/pulls/{number}",
            "author_association": "NONE",
        }
        if in_reply_to is not None:
            comment["in_reply_to_id"] = in_reply_to
        repo.review_comments[comment_id] = comment
        return dict(comment)

    def _new_issue_comment(
        self, repo: FakeRepo, number: int, body: str, *, login: str, bot: bool = False
    ) -> dict[str, Any]:
        comment_id = next(self._review_ids)
        now = _iso(self.clock())
        comment = {
            "id": comment_id,
            "node_id": base64.b64encode(f"IC_{comment_id}".encode()).decode(),
            "user": {"login": login, "type": "Bot" if bot else "User"},
            "body": body,
            "created_at": now,
            "updated_at": now,
            "html_url": f"{self.base_url}/{repo.full_name}/pull/{number}#issuecomment-{comment_id}",
            "issue_url": f"{self.base_url}/repos/{repo.full_name}/issues/{number}",
            "author_association": "NONE",
        }
        repo.issue_comments.append(comment)
        return dict(comment)

    def list_review_comments(
        self, req: RecordedRequest, owner: str, name: str, number: int, review_id: int
    ) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        pull = self._pull(repo, number)
        if not any(r["id"] == review_id for r in pull.reviews):
            raise _error(404, "Not Found", status="404")
        with self._lock:
            found = [
                dict(c)
                for _, c in sorted(repo.review_comments.items())
                if c["pull_request_review_id"] == review_id
            ]
        return _Reply(200, found)

    def create_reply(
        self, req: RecordedRequest, owner: str, name: str, number: int, comment_id: int
    ) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        self._pull(repo, number)
        data = req.json
        if not isinstance(data, dict):
            raise _error(400, "Problems parsing JSON")
        body = data.get("body")
        if not isinstance(body, str):
            raise _error(422, 'Invalid request.\n\n"body" wasn\'t supplied.', status="422")
        with self._lock:
            parent = repo.review_comments.get(comment_id)
            if parent is None or not parent["pull_request_url"].endswith(f"/pulls/{number}"):
                raise _error(404, "Not Found", status="404")
            if parent.get("in_reply_to_id"):
                raise _error(
                    422,
                    "Validation Failed",
                    [
                        {
                            "resource": "PullRequestReviewComment",
                            "code": "invalid",
                            "field": "in_reply_to",
                            "message": REPLY_TO_REPLY,
                        }
                    ],
                    status="422",
                )
            if not body.strip():
                raise _error(
                    422,
                    "Validation Failed",
                    [
                        {
                            "resource": "PullRequestReviewComment",
                            "code": "missing_field",
                            "field": "body",
                        }
                    ],
                    status="422",
                )
            comment = self._new_review_comment(
                repo,
                number,
                parent,
                body,
                login=who.login,
                bot=bool(who.installation_id),
                in_reply_to=comment_id,
            )
        return _Reply(201, comment)

    def create_issue_comment(
        self, req: RecordedRequest, owner: str, name: str, number: int
    ) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        self._pull(repo, number)  # only pull requests here: issues are not kept as such
        data = req.json
        if not isinstance(data, dict) or not isinstance(data.get("body"), str):
            raise _error(422, 'Invalid request.\n\n"body" wasn\'t supplied.', status="422")
        if not data["body"].strip():
            raise _error(
                422,
                "Validation Failed",
                [{"resource": "IssueComment", "code": "missing_field", "field": "body"}],
                status="422",
            )
        with self._lock:
            comment = self._new_issue_comment(
                repo, number, data["body"], login=who.login, bot=bool(who.installation_id)
            )
        return _Reply(201, comment)

    def create_issue(self, req: RecordedRequest, owner: str, name: str) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        if not repo.has_issues:
            raise _error(
                410,
                "Issues are disabled for this repo",
                documentation_url="https://docs.github.com/v3/issues/",
                status="410",
            )
        data = req.json
        if not isinstance(data, dict):
            raise _error(400, "Problems parsing JSON")
        if "title" not in data or data["title"] is None:
            raise _issue_invalid('"title" wasn\'t supplied.')
        title, body = data["title"], data.get("body")
        if isinstance(title, bool) or not isinstance(title, str | int):
            raise _issue_invalid(
                f"For 'properties/title', {json.dumps(title)} is not a string or integer."
            )
        if body is not None and not isinstance(body, str):
            raise _issue_invalid(f"For 'properties/body', {json.dumps(body)} is not a string.")
        title = str(title)
        errors: list[dict[str, Any]] = []
        if not title.strip():
            errors.append({"resource": "Issue", "code": "missing_field", "field": "title"})
        elif len(title) > 256:
            errors.append(_too_long("title", 256))
        if body is not None and len(body) > 65_536:
            errors.append(_too_long("body", 65_536))
        if errors:
            raise _error(
                422, "Validation Failed", errors, documentation_url=ISSUE_DOCS, status="422"
            )
        with self._lock:
            # Issues and pull requests share one sequence of numbers per repository.
            number = max([0, *repo.pulls, *(i["number"] for i in repo.issues)]) + 1
            issue_id = next(self._review_ids)
            now = _iso(self.clock())
            issue = {
                "id": issue_id,
                "node_id": base64.b64encode(f"I_{issue_id}".encode()).decode(),
                "url": f"{self.base_url}/repos/{repo.full_name}/issues/{number}",
                "repository_url": f"{self.base_url}/repos/{repo.full_name}",
                "html_url": f"{self.base_url}/{repo.full_name}/issues/{number}",
                "number": number,
                "state": "open",
                "title": title,
                "body": body,
                "user": {"login": who.login, "type": "Bot" if who.installation_id else "User"},
                "labels": [],
                "assignees": [],
                "comments": 0,
                "created_at": now,
                "updated_at": now,
                "closed_at": None,
                "author_association": "NONE",
            }
            repo.issues.append(issue)
        return _Reply(201, issue, {"Location": issue["url"]})

    def _check_comment(self, diff: FakeDiff, comment: Any) -> None:
        if not isinstance(comment, dict) or not comment.get("path") or "body" not in comment:
            raise _error(422, 'Invalid request.\n\n"path" and "body" are required.')
        changed = diff.file(comment["path"])
        if changed is None:
            raise _unprocessable(PATH_INVALID)
        line, side = comment.get("line"), comment.get("side", "RIGHT")
        if not isinstance(line, int) or side not in ("LEFT", "RIGHT"):
            raise _unprocessable(LINE_NOT_IN_DIFF)
        hunk = changed.anchors.get((side, line))
        if hunk is None or (comment["path"], line) in self.rejected_anchors:
            raise _unprocessable(LINE_NOT_IN_DIFF)
        start = comment.get("start_line")
        if start is None:
            return
        start_side = comment.get("start_side")
        if not isinstance(start, int) or start_side not in ("LEFT", "RIGHT") or start >= line:
            raise _unprocessable(START_NOT_IN_HUNK, new_form=True)
        if changed.anchors.get((start_side, start)) != hunk:
            raise _unprocessable(START_NOT_IN_HUNK, new_form=True)

    # -- checks and statuses ---------------------------------------------------------------

    def _commit(self, repo: FakeRepo, sha: Any) -> str:
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{7,40}", sha):
            raise _error(422, f"No commit found for SHA: {sha}", status="422")
        try:
            return git("rev-parse", "--verify", f"{sha}^{{commit}}", cwd=repo.path).strip()
        except RuntimeError:
            raise _error(422, f"No commit found for SHA: {sha}", status="422") from None

    def _check_fields(self, data: Any, *, creating: bool) -> dict[str, Any]:
        """GitHub's validation of a check run's fields (create or update)."""
        if not isinstance(data, dict):
            raise _error(400, "Problems parsing JSON")

        def invalid(detail: str) -> _Reply:
            return _error(
                422, f"Invalid request.\n\n{detail}", documentation_url=CHECKS_DOCS, status="422"
            )

        for required in ("name", "head_sha") if creating else ():
            if not isinstance(data.get(required), str) or not data[required]:
                raise invalid(f'"{required}" wasn\'t supplied.')
        status, conclusion = data.get("status"), data.get("conclusion")
        if status is not None and status not in CHECK_STATUSES:
            raise invalid(
                f"For 'properties/status', {json.dumps(status)} is not a member of "
                f"{json.dumps(list(CHECK_STATUSES))}."
            )
        if conclusion is not None and conclusion not in CHECK_CONCLUSIONS:
            raise invalid(
                f"For 'properties/conclusion', {json.dumps(conclusion)} is not a member of "
                f"{json.dumps(list(CHECK_CONCLUSIONS))}."
            )
        if conclusion is not None and status not in (None, "completed"):
            raise _error(
                422,
                "Conclusion can only be set when the status is completed",
                documentation_url=CHECKS_DOCS,
                status="422",
            )
        if status == "completed" and conclusion is None:
            raise _error(
                422,
                "Missing conclusion: a completed check run needs one",
                documentation_url=CHECKS_DOCS,
                status="422",
            )
        output = data.get("output")
        if output is not None:
            if not isinstance(output, dict) or not all(
                isinstance(output.get(k), str) for k in ("title", "summary")
            ):
                raise invalid('"title" and "summary" are required in \'output\'.')
            if len(output["summary"]) > 65_535 or len(output.get("text") or "") > 65_535:
                raise _error(
                    422,
                    "Validation Failed",
                    [
                        {
                            "resource": "CheckRun",
                            "code": "custom",
                            "field": "output",
                            "message": "summary is too long (maximum is 65535 characters)",
                        }
                    ],
                    documentation_url=CHECKS_DOCS,
                    status="422",
                )
        details = data.get("details_url")
        if details is not None and not (
            isinstance(details, str) and details.startswith(("http://", "https://"))
        ):
            raise _error(
                422,
                "Validation Failed",
                [{"resource": "CheckRun", "code": "custom", "field": "details_url"}],
                documentation_url=CHECKS_DOCS,
                status="422",
            )
        return data

    def _app_only(self, who: _Token) -> None:
        if who.installation_id is None:
            raise _error(
                403,
                "You must authenticate via a GitHub App.",
                documentation_url=CHECKS_DOCS,
                status="403",
            )

    def create_check_run(self, req: RecordedRequest, owner: str, name: str) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        self._app_only(who)
        repo = self._repo(owner, name, who)
        data = self._check_fields(req.json, creating=True)
        sha = self._commit(repo, data["head_sha"])
        with self._lock:
            run_id = next(self._review_ids)
            now = _iso(self.clock())
            status = "completed" if data.get("conclusion") else data.get("status") or "queued"
            run = {
                "id": run_id,
                "name": data["name"],
                "head_sha": sha,
                "status": status,
                "conclusion": data.get("conclusion"),
                "details_url": data.get("details_url"),
                "external_id": data.get("external_id"),
                "output": dict(data.get("output") or {"title": None, "summary": None}),
                "started_at": now,
                "completed_at": now if status == "completed" else None,
                "app": {"slug": self._app_slug, "installation_id": who.installation_id},
                "html_url": f"{self.base_url}/{repo.full_name}/runs/{run_id}",
                "url": f"{self.base_url}/repos/{repo.full_name}/check-runs/{run_id}",
            }
            repo.check_runs[run_id] = run
            return _Reply(201, dict(run))

    def update_check_run(self, req: RecordedRequest, owner: str, name: str, run_id: int) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        self._app_only(who)
        repo = self._repo(owner, name, who)
        data = self._check_fields(req.json, creating=False)
        with self._lock:
            run = repo.check_runs.get(run_id)
            # Another app's run is not found for this one.
            if run is None or run["app"]["installation_id"] != who.installation_id:
                raise _error(404, "Not Found", status="404")
            for key in ("name", "details_url", "external_id", "status", "conclusion"):
                if key in data:
                    run[key] = data[key]
            if data.get("conclusion"):
                run["status"] = "completed"
            if "output" in data:
                run["output"] = dict(data["output"])
            if run["status"] == "completed":
                run["completed_at"] = _iso(self.clock())
            return _Reply(200, dict(run))

    def list_check_runs(self, req: RecordedRequest, owner: str, name: str, ref: str) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        sha = self._commit(repo, ref)
        wanted = req.query.get("check_name", [None])[0]
        with self._lock:
            runs = [
                dict(r)
                for r in repo.check_runs.values()
                if r["head_sha"] == sha and (wanted is None or r["name"] == wanted)
            ]
        runs.sort(key=lambda r: -r["id"])
        return _Reply(200, {"total_count": len(runs), "check_runs": runs})

    def create_status(self, req: RecordedRequest, owner: str, name: str, sha: str) -> _Reply:
        who = self._identity(req.headers.get("authorization"))
        repo = self._repo(owner, name, who)
        data = req.json
        if not isinstance(data, dict):
            raise _error(400, "Problems parsing JSON")
        state = data.get("state")
        if state not in COMMIT_STATES:
            raise _error(
                422,
                "Invalid request.\n\nFor 'properties/state', "
                f"{json.dumps(state)} is not a member of {json.dumps(list(COMMIT_STATES))}.",
                documentation_url=STATUS_DOCS,
                status="422",
            )
        description = data.get("description")
        if description is not None and (not isinstance(description, str) or len(description) > 140):
            raise _error(
                422,
                "Validation Failed",
                [
                    {
                        "resource": "Status",
                        "code": "custom",
                        "field": "description",
                        "message": "description is too long (maximum is 140 characters)",
                    }
                ],
                documentation_url=STATUS_DOCS,
                status="422",
            )
        commit = self._commit(repo, sha)
        with self._lock:
            status_id = next(self._review_ids)
            status = {
                "id": status_id,
                "sha": commit,
                "state": state,
                "context": data.get("context") or "default",
                "description": description,
                "target_url": data.get("target_url"),
                "creator": {"login": who.login},
                "created_at": _iso(self.clock()),
            }
            repo.statuses.append(status)
        return _Reply(201, dict(status))

    def get_installation(self, req: RecordedRequest, owner: str, name: str) -> _Reply:
        self._verify_app_jwt(req.headers.get("authorization"))
        with self._lock:
            repo = self.repos.get((owner, name))
        if repo is None or repo.installation_id is None:
            raise _error(404, "Not Found", status="404")
        return _Reply(
            200,
            {
                "id": repo.installation_id,
                "app_id": int(self._app_id or 0),
                "app_slug": self._app_slug,
                "account": {"login": owner},
                "target_type": "Organization",
            },
        )

    def installation_repositories(self, req: RecordedRequest) -> _Reply:
        """GET /installation/repositories: what the calling installation token reaches, paged
        like GitHub (per_page default 30, at most 100; Link rel="next")."""
        who = self._identity(req.headers.get("authorization"))
        if who.installation_id is None:
            raise _error(
                403,
                "You must authenticate with an installation access token in order to list "
                "repositories for an installation.",
            )
        try:
            per_page = min(max(int(req.query.get("per_page", ["30"])[0]), 1), 100)
            page = max(int(req.query.get("page", ["1"])[0]), 1)
        except ValueError:
            per_page, page = 30, 1
        with self._lock:
            reached = sorted(
                (r for r in self.repos.values() if r.installation_id == who.installation_id),
                key=lambda r: r.full_name,
            )
        chunk = reached[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(reached):
            query = urlencode({"per_page": per_page, "page": page + 1})
            headers["Link"] = f'<{self.base_url}/installation/repositories?{query}>; rel="next"'
        return _Reply(
            200,
            {
                "total_count": len(reached),
                "repository_selection": "selected",
                "repositories": [
                    {"full_name": r.full_name, "name": r.name, "owner": {"login": r.owner}}
                    for r in chunk
                ],
            },
            headers,
        )

    def create_access_token(self, req: RecordedRequest, installation_id: int) -> _Reply:
        self._verify_app_jwt(req.headers.get("authorization"))
        with self._lock:
            known = any(r.installation_id == installation_id for r in self.repos.values())
            if not known:
                raise _error(404, "Not Found", status="404")
            token = "ghs_" + secrets.token_hex(18)
            expires_at = int(self.clock()) + 3600
            self._tokens[token] = _Token(
                login=f"{self._app_slug}[bot]",
                expires_at=expires_at,
                installation_id=installation_id,
            )
        return _Reply(
            201,
            {
                "token": token,
                "expires_at": _iso(expires_at),
                "permissions": {"contents": "read", "pull_requests": "write"},
                "repository_selection": "selected",
            },
        )

    # -- git smart HTTP --------------------------------------------------------------------

    def git_backend(
        self, handler: _Handler, owner: str, name: str, rest: str, body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        user, _, password = _basic(handler.headers.get("Authorization"))
        with self._lock:
            info = self._tokens.get(password)
            repo = self.repos.get((owner, name))
        valid = info is not None and (info.expires_at is None or info.expires_at > self.clock())
        if not valid or not user:
            return 401, {"WWW-Authenticate": 'Basic realm="GitHub"'}, b"Unauthorized\n"
        if repo is None or "receive-pack" in rest or "receive-pack" in handler.query_string:
            return 403, {}, b"Forbidden\n"
        env = {
            **os.environ,
            "GIT_PROJECT_ROOT": str(repo.path),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": rest,
            "REQUEST_METHOD": handler.command,
            "QUERY_STRING": handler.query_string,
            "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "REMOTE_USER": user,
            # Like github.com: any commit reachable from a ref can be fetched by SHA.
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "uploadpack.allowReachableSHA1InWant",
            "GIT_CONFIG_VALUE_0": "true",
        }
        if handler.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = handler.headers["Git-Protocol"]
        if handler.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = handler.headers["Content-Encoding"]
        proc = subprocess.run(
            ["git", "http-backend"],
            input=body,
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = proc.stdout.partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers[key.strip()] = value.strip()
        return status, headers, payload


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"
    query_string = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        self.query_string = parts.query
        body = self._read_body()
        git_match = re.fullmatch(r"/([^/]+)/([^/]+)\.git(/.*)", parts.path)
        if git_match:
            status, headers, payload = self.fake.git_backend(self, *git_match.groups(), body)
            self._send(status, payload, headers)
            return
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        req = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            json=parsed,
        )
        with self.fake._lock:
            self.fake.requests.append(req)
        try:
            reply = self._dispatch(req)
        except _Reply as raised:
            reply = raised
        except Exception as exc:  # a bug in the fake must show up as a failing test
            reply = _Reply(500, {"message": f"fake GitHub error: {exc!r}"})
        req.status = reply.status
        headers = {**self.fake._rate_headers(), **reply.headers}
        if isinstance(reply.body, str):
            payload = reply.body.encode("utf-8")
        else:
            payload = json.dumps(reply.body).encode("utf-8")
            headers.setdefault("Content-Type", "application/json; charset=utf-8")
        self._send(reply.status, payload, headers)

    def _dispatch(self, req: RecordedRequest) -> _Reply:
        fake = self.fake
        if not req.headers.get("user-agent"):
            raise _Reply(
                403,
                "Request forbidden by administrative rules. Please make sure your request has a "
                "User-Agent header (https://docs.github.com/en/rest/overview/resources-in-the-rest"
                "-api#user-agent-required). Check https://developer.github.com for other possible "
                "causes.\n",
                {"Content-Type": "text/plain; charset=utf-8"},
            )
        version = req.headers.get("x-github-api-version")
        if version is not None and version != API_VERSION:
            raise _error(400, f"API version '{version}' is not supported.", status="400")
        held = fake._take_hold(req)
        if held is not None:
            held.entered.set()
            held.released.wait(timeout=120)
            if not held.apply:
                raise _error(502, "Server Error")
        fault = fake._take_fault(req)
        if fault is not None and not fault.after_apply:
            raise fake._fault_reply(fault)
        routes: list[tuple[str, str, Callable[..., _Reply]]] = [
            ("GET", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)", fake.get_pull),
            ("GET", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/files", fake.list_files),
            ("POST", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews", fake.create_review),
            ("GET", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews", fake.list_reviews),
            (
                "GET",
                r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews/(\d+)/comments",
                fake.list_review_comments,
            ),
            (
                "POST",
                r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/comments/(\d+)/replies",
                fake.create_reply,
            ),
            ("POST", r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments", fake.create_issue_comment),
            ("POST", r"/repos/([^/]+)/([^/]+)/issues", fake.create_issue),
            ("POST", r"/repos/([^/]+)/([^/]+)/check-runs", fake.create_check_run),
            ("PATCH", r"/repos/([^/]+)/([^/]+)/check-runs/(\d+)", fake.update_check_run),
            ("GET", r"/repos/([^/]+)/([^/]+)/commits/([^/]+)/check-runs", fake.list_check_runs),
            ("POST", r"/repos/([^/]+)/([^/]+)/statuses/([^/]+)", fake.create_status),
            ("GET", r"/repos/([^/]+)/([^/]+)/installation", fake.get_installation),
            ("POST", r"/app/installations/(\d+)/access_tokens", fake.create_access_token),
            ("GET", r"/installation/repositories", fake.installation_repositories),
        ]
        for method, pattern, endpoint in routes:
            match = re.fullmatch(pattern, req.path)
            if match and req.method == method:
                args = [int(g) if g.isdigit() else g for g in match.groups()]
                reply = endpoint(req, *args)
                if fault is not None:  # applied; the answer is lost
                    raise fake._fault_reply(fault)
                return reply
        raise _error(404, "Not Found", status="404")

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() in ("bearer", "token") else None


def _basic(authorization: str | None) -> tuple[str, str, str]:
    if not authorization or not authorization.lower().startswith("basic "):
        return "", "", ""
    with contextlib.suppress(ValueError):
        decoded = base64.b64decode(authorization[6:].strip()).decode("utf-8")
        return decoded.partition(":")
    return "", "", ""


def _ref_name(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- webhooks ------------------------------------------------------------------------------


def sign(secret: bytes, body: bytes) -> str:
    """The X-Hub-Signature-256 value GitHub sends for `body`."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def pull_request_payload(
    fake: FakeGitHub, owner: str, name: str, number: int, *, action: str
) -> dict[str, Any]:
    """A `pull_request` delivery for the fake's current PR state."""
    repo = fake.repos[(owner, name)]
    pull = repo.pulls[number]
    installation = {"id": repo.installation_id} if repo.installation_id else None
    payload: dict[str, Any] = {
        "action": action,
        "number": number,
        "pull_request": fake.pull_json(repo, pull),
        "repository": {"full_name": repo.full_name, "name": name, "owner": {"login": owner}},
        "sender": {"login": pull.author},
    }
    if installation:
        payload["installation"] = installation
    return payload


def review_comment_payload(
    fake: FakeGitHub,
    owner: str,
    name: str,
    number: int,
    comment: Mapping[str, Any],
    *,
    action: str = "created",
) -> dict[str, Any]:
    """A `pull_request_review_comment` delivery about `comment` (as the fake stored it)."""
    payload = pull_request_payload(fake, owner, name, number, action=action)
    payload.pop("number")
    payload["comment"] = dict(comment)
    payload["sender"] = dict(comment["user"])
    return payload


def issue_comment_payload(
    fake: FakeGitHub,
    owner: str,
    name: str,
    number: int,
    comment: Mapping[str, Any],
    *,
    action: str = "created",
) -> dict[str, Any]:
    """An `issue_comment` delivery about a comment on pull request `number`'s conversation:
    GitHub sends the pull request as an issue with a `pull_request` link."""
    repo = fake.repos[(owner, name)]
    pull = repo.pulls[number]
    api = f"{fake.base_url}/repos/{repo.full_name}"
    payload: dict[str, Any] = {
        "action": action,
        "issue": {
            "number": number,
            "title": pull.title,
            "state": pull.state,
            "user": {"login": pull.author, "type": "User"},
            "pull_request": {"url": f"{api}/pulls/{number}"},
        },
        "comment": dict(comment),
        "repository": {"full_name": repo.full_name, "name": name, "owner": {"login": owner}},
        "sender": dict(comment["user"]),
    }
    if repo.installation_id:
        payload["installation"] = {"id": repo.installation_id}
    return payload


def deliver_webhook(
    url: str,
    *,
    secret: bytes,
    event: str,
    payload: Mapping[str, Any],
    delivery_id: str | None = None,
) -> httpx.Response:
    """POST a signed delivery to `url` the way GitHub does."""
    body = json.dumps(payload).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/fake",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(secret, body),
    }
    return httpx.post(url, content=body, headers=headers, timeout=10)
