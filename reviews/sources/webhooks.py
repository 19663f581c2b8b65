"""Pure helpers for GitHub webhook deliveries: signature check and pull_request parsing."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Actions after which the PR's code is new (or newly ready) and a review round should run.
ROUND_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})


class WebhookPayloadError(ValueError):
    """A pull_request delivery whose payload lacks what every such delivery carries."""


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether `X-Hub-Signature-256` matches HMAC-SHA256(secret, raw body).

    Computed over the raw bytes (re-serialised JSON would differ) and compared in constant time.
    An empty secret never verifies: it would accept anything signed with an empty key.
    """
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), header.strip().encode("utf-8", "replace"))


@dataclass(frozen=True)
class PullRequestEvent:
    action: str
    owner: str
    repo: str
    number: int
    title: str
    body: str
    draft: bool
    state: str
    merged: bool
    head_sha: str
    head_ref: str
    base_sha: str
    base_ref: str
    author: str
    sender: str | None
    installation_id: int | None

    @property
    def queues_round(self) -> bool:
        """Opened, pushed to, reopened or marked ready — and not a draft (drafts wait)."""
        return self.queues_round_for(review_drafts=False)

    def queues_round_for(self, *, review_drafts: bool) -> bool:
        """As `queues_round`, for a repository that may review drafts too."""
        return self.action in ROUND_ACTIONS and (review_drafts or not self.draft)


def parse_pull_request_event(event: str, payload: Mapping[str, Any]) -> PullRequestEvent | None:
    """The pull request a delivery is about, or None for any other event (ping, push, …).

    Every pull_request action is returned (closed and converted_to_draft matter to the space);
    `queues_round` tells whether it should start a review round.
    """
    if event != "pull_request":
        return None
    try:
        pr = payload["pull_request"]
        repository = payload["repository"]
        installation = payload.get("installation") or {}
        sender = payload.get("sender") or {}
        owner, _, name = str(repository["full_name"]).partition("/")
        return PullRequestEvent(
            action=str(payload["action"]),
            owner=owner,
            repo=name,
            number=int(payload.get("number") or pr["number"]),
            title=str(pr.get("title") or ""),
            body=str(pr.get("body") or ""),
            draft=bool(pr.get("draft", False)),
            state=str(pr.get("state") or "open"),
            merged=bool(pr.get("merged", False)),
            head_sha=str(pr["head"]["sha"]),
            head_ref=str(pr["head"]["ref"]),
            base_sha=str(pr["base"]["sha"]),
            base_ref=str(pr["base"]["ref"]),
            author=str(pr["user"]["login"]),
            sender=sender.get("login"),
            installation_id=int(installation["id"]) if "id" in installation else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise WebhookPayloadError(f"malformed pull_request payload: {exc!r}") from exc


# Events of a GitHub App's installation: which repositories it may reach.
INSTALLATION_EVENTS = frozenset({"installation", "installation_repositories"})


@dataclass(frozen=True)
class InstallationEvent:
    event: str  # installation | installation_repositories
    action: str  # created, deleted, suspend, unsuspend, new_permissions_accepted | added, removed
    installation_id: int
    account: str
    added: tuple[str, ...]  # owner/name of repositories the installation now reaches
    removed: tuple[str, ...]  # … and of those it no longer reaches


def _names(items: Any) -> tuple[str, ...]:
    return tuple(str(item["full_name"]) for item in items or ())


def parse_installation_event(event: str, payload: Mapping[str, Any]) -> InstallationEvent | None:
    """An `installation` or `installation_repositories` delivery, or None for other events.

    `installation` created lists the repositories it was given (`repositories`, absent when
    the installation covers all of an account's repositories); deleted lists those it had."""
    if event not in INSTALLATION_EVENTS:
        return None
    try:
        installation = payload["installation"]
        action = str(payload["action"])
        account = str((installation.get("account") or {}).get("login") or "")
        if event == "installation":
            listed = _names(payload.get("repositories"))
            added, removed = (listed, ()) if action != "deleted" else ((), listed)
        else:
            added = _names(payload.get("repositories_added"))
            removed = _names(payload.get("repositories_removed"))
        return InstallationEvent(
            event=event,
            action=action,
            installation_id=int(installation["id"]),
            account=account,
            added=added,
            removed=removed,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise WebhookPayloadError(f"malformed {event} payload: {exc!r}") from exc


# Comments people write on a pull request: in a review comment's conversation, or on the pull
# request's own conversation (GitHub sends those as comments on an issue).
COMMENT_EVENTS = frozenset({"pull_request_review_comment", "issue_comment"})


@dataclass(frozen=True)
class CommentEvent:
    event: str  # pull_request_review_comment | issue_comment
    action: str  # created, edited, deleted
    owner: str
    repo: str
    number: int
    comment_id: int
    body: str
    login: str
    bot: bool  # written by an app or a bot account
    url: str
    in_reply_to_id: int | None  # review comments: the conversation's top-level comment
    installation_id: int | None

    @property
    def on_review_comment(self) -> bool:
        return self.event == "pull_request_review_comment"


def parse_comment_event(event: str, payload: Mapping[str, Any]) -> CommentEvent | None:
    """A comment on a pull request, or None for other events and for comments on plain
    issues (no `issue.pull_request`)."""
    if event not in COMMENT_EVENTS:
        return None
    try:
        if event == "issue_comment":
            issue = payload["issue"]
            if not issue.get("pull_request"):
                return None
            number = int(issue["number"])
        else:
            number = int(payload["pull_request"]["number"])
        comment = payload["comment"]
        user = comment.get("user") or {}
        owner, _, name = str(payload["repository"]["full_name"]).partition("/")
        installation = payload.get("installation") or {}
        reply_to = comment.get("in_reply_to_id")
        return CommentEvent(
            event=event,
            action=str(payload["action"]),
            owner=owner,
            repo=name,
            number=number,
            comment_id=int(comment["id"]),
            body=str(comment.get("body") or ""),
            login=str(user.get("login") or "someone"),
            bot=str(user.get("type") or "") == "Bot"
            or bool(comment.get("performed_via_github_app")),
            url=str(comment.get("html_url") or ""),
            in_reply_to_id=int(reply_to) if reply_to is not None else None,
            installation_id=int(installation["id"]) if "id" in installation else None,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise WebhookPayloadError(f"malformed {event} payload: {exc!r}") from exc
